#!/usr/bin/env bash
# Installs the external validators the integration tests run (DESIGN §8), inside the project:
#   target/test-tools/venv   kubernetes-validate (offline Kubernetes schemas) and openstacksdk
#                            (loads the generated clouds.yaml), plus jsonschema for our own CRD schemas
#   and the shellcheck binary from Debian (apt-get update only when the package is missing)
#   target/test-tools/gcfg-oracle   tests/oracle/gcfg/main.go built against Debian's gcfg 1.2.3
#                            (the upstream CCM's cloud.conf parser) with Debian's Go 1.19, offline
#   target/test-tools/bin/kubectl   Debian's kubernetes-client, unpacked (not installed: another
#                            kubectl may own /usr/bin/kubectl), for the fake API server's tests
# Idempotent: a second run checks a stamp and the executables and returns in well under a second.
# Fails loudly (non-zero, with the failing step) if anything cannot be installed.
# Tests find the tools through CCM_TEST_TOOLS=<repo>/target/test-tools (scripts/test.sh exports it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Pinned versions. Bump them together and rerun; the stamp makes the venv rebuild.
# kubernetes-validate 1.37.0 bundles the schemas for Kubernetes 1.25 … 1.37 (we validate against 1.33).
requirements=(
  "kubernetes-validate==1.37.0"
  "openstacksdk==4.22.0"
  "jsonschema==4.26.0" # used directly by tests/tools/validate_crd.py
)

root=$PWD/target/test-tools
venv=$root/venv
stamp=$venv/.ccm-requirements

die() { printf 'test-tools: FAILED: %s\n' "$*" >&2; exit 1; }
log() { printf 'test-tools: %s\n' "$*" >&2; }

want=$(printf '%s\n' "${requirements[@]}")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
  && [ -x "$venv/bin/kubernetes-validate" ] && [ -x "$venv/bin/python" ]; then
  log "python tools up to date in $venv"
else
  log "installing ${requirements[*]} into $venv"
  rm -rf "$venv"
  mkdir -p "$root"
  python3 -m venv "$venv" || die "python3 -m venv $venv (is python3-venv installed?)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    "${requirements[@]}" || die "pip install ${requirements[*]}"
  # Prove the install is usable before stamping it.
  "$venv/bin/kubernetes-validate" --version >/dev/null || die "kubernetes-validate does not run"
  "$venv/bin/python" -c 'import openstack.config, jsonschema, yaml' \
    || die "openstacksdk/jsonschema/yaml do not import"
  printf '%s\n' "$want" >"$stamp"
fi

if ! command -v shellcheck >/dev/null 2>&1; then
  log "installing shellcheck (apt)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq shellcheck >/dev/null 2>&1; then
    apt-get update -qq || die "apt-get update"
    apt-get install -y -qq shellcheck || die "apt-get install shellcheck"
  fi
  command -v shellcheck >/dev/null 2>&1 || die "shellcheck not on PATH after install"
fi

# The gcfg oracle: Debian's Go and gcfg sources, built with no network (GOPATH mode).
go=/usr/lib/go-1.19/bin/go
gcfg_src=/usr/share/gocode/src/gopkg.in/gcfg.v1
if [ ! -x "$go" ] || [ ! -d "$gcfg_src" ]; then
  log "installing golang-1.19-go golang-gopkg-gcfg.v1-dev (apt)"
  export DEBIAN_FRONTEND=noninteractive
  pkgs=(golang-1.19-go golang-gopkg-gcfg.v1-dev)
  if ! apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; then
    apt-get update -qq || die "apt-get update"
    apt-get install -y -qq --no-install-recommends "${pkgs[@]}" || die "apt-get install ${pkgs[*]}"
  fi
  if [ ! -x "$go" ] || [ ! -d "$gcfg_src" ]; then die "$go or $gcfg_src missing after install"; fi
fi
oracle=$root/gcfg-oracle
oracle_src=tests/oracle/gcfg/main.go
if [ ! -x "$oracle" ] || [ "$oracle_src" -nt "$oracle" ]; then
  log "building $oracle"
  mkdir -p "$root"
  GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS="" GOCACHE=$root/go-cache \
    "$go" build -o "$oracle" "$oracle_src" || die "go build $oracle_src"
fi

# kubectl from Debian's kubernetes-client: downloaded and unpacked into the tools directory,
# never installed (a kubectl from another package may own /usr/bin/kubectl).
kubectl=$root/bin/kubectl
if [ ! -x "$kubectl" ]; then
  log "unpacking Debian's kubernetes-client into $root/bin"
  deb_dir=$(mktemp -d)
  trap 'rm -rf "$deb_dir"' EXIT
  if ! (cd "$deb_dir" && apt-get download -qq kubernetes-client >/dev/null 2>&1); then
    apt-get update -qq || die "apt-get update"
    (cd "$deb_dir" && apt-get download -qq kubernetes-client) || die "apt-get download kubernetes-client"
  fi
  dpkg-deb -x "$deb_dir"/kubernetes-client_*.deb "$deb_dir/x" || die "dpkg-deb -x kubernetes-client"
  mkdir -p "$root/bin"
  install -m 0755 "$deb_dir/x/usr/bin/kubectl" "$kubectl"
  "$kubectl" version --client >/dev/null 2>&1 || die "$kubectl does not run"
fi

read -r kv_version sdk_version < <("$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("kubernetes-validate"), m.version("openstacksdk"))')
sc_version=$(shellcheck --version | sed -n 's/^version: //p')
log "kubernetes-validate $kv_version: $venv/bin/kubernetes-validate"
log "openstacksdk $sdk_version: $venv/bin/python"
log "shellcheck $sc_version: $(command -v shellcheck)"
log "gcfg $(dpkg-query -W -f='${Version}' golang-gopkg-gcfg.v1-dev) oracle: $oracle"
log "kubectl $("$kubectl" version --client --short 2>/dev/null || "$kubectl" version --client | head -n 1): $kubectl"
log "tests use CCM_TEST_TOOLS=$root"
