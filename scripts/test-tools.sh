#!/usr/bin/env bash
# Installs the external validators the integration tests run (DESIGN §8), inside the project:
#   target/test-tools/venv   kubernetes-validate (offline Kubernetes schemas) and openstacksdk
#                            (loads the generated clouds.yaml), plus jsonschema for our own CRD schemas
#   and the shellcheck binary from Debian (apt-get update only when the package is missing)
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

read -r kv_version sdk_version < <("$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("kubernetes-validate"), m.version("openstacksdk"))')
sc_version=$(shellcheck --version | sed -n 's/^version: //p')
log "kubernetes-validate $kv_version: $venv/bin/kubernetes-validate"
log "openstacksdk $sdk_version: $venv/bin/python"
log "shellcheck $sc_version: $(command -v shellcheck)"
log "tests use CCM_TEST_TOOLS=$root"
