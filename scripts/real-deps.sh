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
tailscale_oldest=$(pin tailscaleOldest)
coredns=$(pin coredns)

if ! command -v go >/dev/null 2>&1; then
  echo "real-deps: Go is missing: install Go >= 1.26 (https://go.dev/doc/install or Debian golang-1.26) to build the real peers" >&2
  exit 1
fi

cache="$root/.cache/real"
mkdir -p "$cache"
export GOFLAGS="-trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local
# A module whose go.mod asks for a newer Go than the local one (tailscale v1.104 wants go 1.27.x) is
# built with that exact toolchain, which the go command fetches once from the module proxy
# (golang.org/toolchain) into the module cache; every other module keeps GOTOOLCHAIN=local.
toolchain_for() { # <module>@<version>
  local mod want have
  mod=$(GOTOOLCHAIN=local go mod download -json "$1" 2>/dev/null | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p' || true)
  want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$mod" 2>/dev/null | head -1)
  have=$(go env GOVERSION); have=${have#go}
  if [ -n "$want" ] && [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | tail -1)" != "$have" ]; then
    echo "go$want"
  else
    echo local
  fi
}
# `go install module@version` would ask the proxy for the module's version list (for deprecation
# notices), which the proxy refuses for headscale; download the exact version and build inside it.
build() { # <module>@<version> <package in the module> <binary> <dir>
  local dir="$cache/$4"
  if [ -x "$dir/$3" ]; then return 0; fi
  local t0=$SECONDS src
  local toolchain
  toolchain=$(toolchain_for "$1")
  echo "real-deps: building $3 from $1 (GOTOOLCHAIN=$toolchain)"
  src=$(GOTOOLCHAIN=$toolchain go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  if [ -z "$src" ]; then echo "real-deps: go mod download $1 gave no source directory" >&2; exit 1; fi
  mkdir -p "$dir"
  (cd "$src" && GOTOOLCHAIN=$toolchain go build -o "$dir/$3.tmp" "$2")
  mv "$dir/$3.tmp" "$dir/$3"
  echo "real-deps: $3 built in $((SECONDS - t0)) s"
}
build "github.com/juanfont/headscale@$headscale" ./cmd/headscale headscale "headscale-$headscale"
for b in tailscaled tailscale containerboot; do
  build "tailscale.com@$tailscale" "./cmd/$b" "$b" "tailscale-$tailscale"
  # the oldest tailscale the docs claim to support, booted by test/real/oldest.test.ts
  build "tailscale.com@$tailscale_oldest" "./cmd/$b" "$b" "tailscale-$tailscale_oldest"
done
build "github.com/coredns/coredns@v$coredns" . coredns "coredns-$coredns"
echo "real-deps: ready in .cache/real (headscale $headscale, tailscale $tailscale and $tailscale_oldest, coredns $coredns)"
