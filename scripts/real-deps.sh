#!/usr/bin/env bash
# Builds the real peers the real-world tests run (test/real/): Headscale, tailscaled, tailscale,
# containerboot and CoreDNS, from their published Go modules at the exact versions the operator
# pins (src/real-versions.json, read by src/config.ts for the images), into .cache/real/<version>/.
# Idempotent: a binary already built for its pinned version is not rebuilt, and nothing is fetched.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

pins="src/real-versions.json"
pin() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$pins"; }
headscale=$(pin headscale)
tailscale=$(pin tailscale)
coredns=$(pin coredns)

if ! command -v go >/dev/null 2>&1; then
  echo "real-deps: Go is missing: install Go >= 1.26 (https://go.dev/doc/install or Debian golang-1.26) to build the real peers" >&2
  exit 1
fi

cache="$root/.cache/real"
mkdir -p "$cache"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local
# `go install module@version` would ask the proxy for the module's version list (for deprecation
# notices), which the proxy refuses for headscale; download the exact version and build inside it.
build() { # <module>@<version> <package in the module> <binary> <dir>
  local dir="$cache/$4"
  if [ -x "$dir/$3" ]; then return 0; fi
  local t0=$SECONDS src
  echo "real-deps: building $3 from $1"
  src=$(go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  if [ -z "$src" ]; then echo "real-deps: go mod download $1 gave no source directory" >&2; exit 1; fi
  mkdir -p "$dir"
  (cd "$src" && go build -o "$dir/$3.tmp" "$2")
  mv "$dir/$3.tmp" "$dir/$3"
  echo "real-deps: $3 built in $((SECONDS - t0)) s"
}
build "github.com/juanfont/headscale@$headscale" ./cmd/headscale headscale "headscale-$headscale"
for b in tailscaled tailscale containerboot; do
  build "tailscale.com@$tailscale" "./cmd/$b" "$b" "tailscale-$tailscale"
done
build "github.com/coredns/coredns@v$coredns" . coredns "coredns-$coredns"
echo "real-deps: ready in .cache/real (headscale $headscale, tailscale $tailscale, coredns $coredns)"
