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
etcd=$(pin etcd)
kubernetes=$(pin kubernetes)
grpc_examples=$(pin grpcExamples)
gateway_api=$(pin gatewayApi)
cert_manager=$(pin certManager)

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
# The real Kubernetes control plane (test/real/kube/): etcd at the version kubernetes' go.mod
# requires, kube-apiserver and kube-controller-manager. Their modules carry `replace => ../x` or
# `=> ./staging/x` directives that work only inside their own source trees, so they cannot be
# built in place like the peers above: a small wrapper module made here requires them, and
# `go mod tidy` resolves the rest from the proxy.
built() { # <dir> <binaries...>: all there already?
  local dir="$cache/$1" b
  shift
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}
wrapped() { # <dir> <go.mod lines> <packages the wrapper imports> <binary=package...>; $ldflags if set
  local dir="$cache/$1" modlines="$2" imports="$3" t0=$SECONDS b
  shift 3
  echo "real-deps: building $* in a wrapper module"
  mkdir -p "$dir/wrapper"
  printf 'module tailnet-operator.local/wrapper\n\ngo 1.25\n\n%s\n' "$modlines" >"$dir/wrapper/go.mod"
  { echo "package main"; echo; for b in $imports; do echo "import _ \"$b\""; done; echo; echo "func main() {}"; } >"$dir/wrapper/main.go"
  (
    cd "$dir/wrapper"
    export GOWORK=off
    go mod tidy
    for b in "$@"; do
      go build -ldflags="${ldflags:-}" -o "$dir/${b%%=*}.tmp" "${b#*=}"
      mv "$dir/${b%%=*}.tmp" "$dir/${b%%=*}"
    done
  )
  echo "real-deps: ${*%%=*} built in $((SECONDS - t0)) s"
}
built "etcd-$etcd" etcd ||
  wrapped "etcd-$etcd" "require go.etcd.io/etcd/server/v3 $etcd" go.etcd.io/etcd/server/v3/etcdmain \
    etcd=go.etcd.io/etcd/server/v3
# The version is stamped at link time as kubernetes' own build does (hack/lib/version.sh): unstamped,
# the server says v0.0.0-master and `helm install` refuses a chart with a kubeVersion constraint.
if ! built "kubernetes-$kubernetes" kube-apiserver kube-controller-manager ||
  ! "$cache/kubernetes-$kubernetes/kube-apiserver" --version | grep -qx "Kubernetes $kubernetes"; then
  # Each k8s.io/* staging module points at its published twin: k8s.io/kubernetes v1.35.4 -> v0.35.4.
  kgomod=$(go mod download -json "k8s.io/kubernetes@$kubernetes" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  staging=$(sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*|replace \1 => \1 v0.'"${kubernetes#v1.}"'|p' "$kgomod")
  minor=${kubernetes#v1.}
  ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kubernetes -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
  done
  ldflags=$ldflags wrapped "kubernetes-$kubernetes" "require k8s.io/kubernetes $kubernetes
$staging" "k8s.io/kubernetes/cmd/kube-apiserver/app k8s.io/kubernetes/cmd/kube-controller-manager/app" \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager
fi
# grpc-go's route_guide example (test/real/grpc.test.ts: all four gRPC call kinds through an http
# TailnetIngress). Its module (google.golang.org/grpc/examples, a pseudo-version: the examples have no tags)
# replaces google.golang.org/grpc with `../`, so it is built from a wrapper module like etcd; the server's
# feature database comes from the same module in the module cache.
if ! built "grpc-examples-$grpc_examples" route_guide_server route_guide_client ||
  [ ! -f "$cache/grpc-examples-$grpc_examples/route_guide_db.json" ]; then
  wrapped "grpc-examples-$grpc_examples" "require google.golang.org/grpc/examples $grpc_examples" \
    google.golang.org/grpc/examples/route_guide/routeguide \
    route_guide_server=google.golang.org/grpc/examples/route_guide/server \
    route_guide_client=google.golang.org/grpc/examples/route_guide/client
  examples=$(go mod download -json "google.golang.org/grpc/examples@$grpc_examples" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  cp "$examples/route_guide/testdata/route_guide_db.json" "$cache/grpc-examples-$grpc_examples/"
fi
# The Gateway API CRDs (standard channel) the real tests apply to the real kube-apiserver: data, not a binary,
# read from the Go module cache (test/real/kube/gateway-api.ts); `go mod download` fetches it once.
if ! GOTOOLCHAIN=local go mod download "sigs.k8s.io/gateway-api@$gateway_api" >/dev/null; then
  echo "real-deps: go mod download sigs.k8s.io/gateway-api@$gateway_api failed" >&2
  exit 1
fi
# cert-manager's controller (test/real/cert-manager.test.ts): upstream's main lives in a nested module
# (cmd/controller, `replace => ../../`) that the module proxy does not serve, so scripts/cert-manager/main.go
# runs the pinned module's own controllers (a wrapper module like the ones above). The tests read the
# CRDs from that module's deploy/crds in the module cache (`go mod download -json` gives the folder).
if ! built "cert-manager-$cert_manager" cert-manager-controller; then
  t0=$SECONDS
  echo "real-deps: building cert-manager-controller from github.com/cert-manager/cert-manager@$cert_manager"
  dir="$cache/cert-manager-$cert_manager"
  mkdir -p "$dir/wrapper"
  printf 'module tailnet-operator.local/cert-manager\n\ngo 1.26.0\n\nrequire github.com/cert-manager/cert-manager %s\n' \
    "$cert_manager" >"$dir/wrapper/go.mod"
  cp scripts/cert-manager/main.go "$dir/wrapper/main.go"
  (
    cd "$dir/wrapper"
    export GOWORK=off
    go mod tidy
    go build -o "$dir/cert-manager-controller.tmp" .
  )
  mv "$dir/cert-manager-controller.tmp" "$dir/cert-manager-controller"
  echo "real-deps: cert-manager-controller built in $((SECONDS - t0)) s"
fi
go mod download "github.com/cert-manager/cert-manager@$cert_manager"
echo "real-deps: ready in .cache/real (headscale $headscale, tailscale $tailscale and $tailscale_oldest, coredns $coredns, etcd $etcd, kubernetes $kubernetes, grpc examples $grpc_examples, cert-manager $cert_manager; gateway-api $gateway_api CRDs in the module cache)"
