#!/usr/bin/env bash
# The one test entry point, for a fresh machine and for CI (.ci/run calls exactly this).
# Installs what the tests need, then checks formatting, lints and runs every test.
#
#   scripts/test.sh            everything
#   scripts/test.sh -- FILTER  only tests matching FILTER (passed to cargo nextest)
#   scripts/test.sh --no-openstack [-- FILTER]
#                              without the real OpenStack services and real Kubernetes (a
#                              developer's choice; it prints a WARNING, CI never does this)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "tools"
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
export CCM_TEST_TOOLS="$PWD/target/test-tools" && scripts/test-tools.sh # validators the tests run

openstack=1
if [ "${1:-}" = "--no-openstack" ]; then shift; openstack=""; fi
filter=()
if [ "${1:-}" = "--" ]; then shift; filter=("$@"); fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo doc (a broken or private intra-doc link fails)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q

step "crate boundaries (README: Layout)"
# The CCM binary ships neither the generator, its templates, nor any test code.
ccm_tree=$(cargo tree --locked -e normal -p openstack-cloud-controller-manager --prefix none)
for forbidden in ccm-assets handlebars fake-kube-apiserver testkit; do
  if grep -q "^$forbidden v" <<<"$ccm_tree"; then
    echo "openstack-cloud-controller-manager depends on $forbidden (cargo tree -e normal -i $forbidden)" >&2
    exit 1
  fi
done

step "shellcheck"
shellcheck scripts/*.sh scripts/lib/*.sh scripts/openstack/*.sh scripts/kube/*.sh .ci/run

step "the test scripts' own tests (python3 -m unittest, scripts/tests)"
python3 -m unittest discover -s scripts/tests

step "no import circle between modules (scripts/module-cycles.py)"
scripts/module-cycles.py src controller/src crates/*/src

step "tests"
# A missing or changed golden file fails the run instead of being written (review them with
# `cargo insta review`, or regenerate with INSTA_UPDATE=always and read the diff).
export INSTA_UPDATE=no
# A filter may match only tests that need the real services (they run below).
no_tests=()
[ ${#filter[@]} -eq 0 ] || no_tests=(--no-tests=pass)
cargo nextest run --workspace --locked --no-fail-fast "${no_tests[@]}" "${filter[@]}"
if [ ${#filter[@]} -eq 0 ]; then
  cargo test --workspace --locked --doc
  step "benchmarks still run (scripts/bench.sh --quick; figures: BENCHMARKS.md)"
  scripts/bench.sh --quick
  step "container image (scripts/image.sh --test: release build, same digest twice, run from it)"
  scripts/image.sh --test
fi

# Tests against real services (DESIGN §8). scripts/openstack-up.sh installs and starts Keystone,
# Nova, Neutron, Octavia and the TLS front; scripts/kube-up.sh installs etcd, containerd, runc
# and the CNI plugins (apt), builds Kubernetes once per release outside the clone (10-17 min
# cold, a stamp check warm) and starts a control plane and node (issue 25). Each is reused when
# already running; the smoke tests prove them; then the Rust tests marked
# #[ignore = "needs real OpenStack (scripts/openstack-up.sh)"] or
# #[ignore = "needs real Kubernetes (scripts/kube-up.sh)"] run with CCM_OPENSTACK_ENV and
# CCM_KUBE_ENV. What this run started is stopped again, on failure too. The test project's
# inventory is taken before the Rust tests and again after the last step that uses the stack
# (scripts/openstack/inventory.py): anything new since is a leak and fails the run, listed.
if [ -z "$openstack" ]; then
  printf '\nWARNING: --no-openstack: the tests against real OpenStack services and real Kubernetes did NOT run\n' >&2
else
  started=() inventory=""
  stop_started() {
    local down
    for down in "${started[@]}"; do "$down" || true; done
    started=()
  }
  check_leaks() {
    [ -n "$inventory" ] || return 0
    local before=$inventory
    inventory=""
    step "real OpenStack: nothing left in the test project (scripts/openstack/inventory.py)"
    scripts/openstack/inventory.py check "$before" --env "$env_file"
  }
  on_exit() {
    local status=$?
    check_leaks || status=1 # a failed test's leaks are listed too
    stop_started
    exit "$status"
  }
  trap on_exit EXIT
  step "real OpenStack: scripts/openstack-up.sh"
  scripts/openstack-up.sh --status 2>/dev/null || started+=(scripts/openstack-down.sh)
  env_file=$(scripts/openstack-up.sh) # prints the path of the env file the tests read
  step "real OpenStack: smoke test"
  scripts/openstack/smoke.py "$env_file"
  scripts/openstack-up.sh --status # still running and answering: a second up would reuse it
  step "real Kubernetes: scripts/kube-up.sh"
  scripts/kube-up.sh --status 2>/dev/null || started+=(scripts/kube-down.sh)
  kube_env=$(scripts/kube-up.sh) # prints the path of the env file the tests read
  step "real Kubernetes: smoke test"
  scripts/kube/smoke.sh "$kube_env"
  scripts/kube-up.sh --status
  step "upstream's CCM for the hand-back test: scripts/upstream-occm.sh (built once per machine)"
  upstream_occm=$(scripts/upstream-occm.sh)
  step "real OpenStack and Kubernetes: the Rust tests that need them"
  export CCM_OPENSTACK_ENV=$env_file CCM_KUBE_ENV=$kube_env CCM_UPSTREAM_OCCM=$upstream_occm
  inventory=target/openstack-inventory-before-tests.json
  scripts/openstack/inventory.py save "$inventory" --env "$env_file"
  cargo nextest run --workspace --locked --no-fail-fast --run-ignored only --no-tests=pass \
    "${filter[@]}"
  if [ ${#filter[@]} -eq 0 ]; then
    step "real OpenStack: the scale benchmark still runs against it (N = 2, about 20 s)"
    scripts/bench.sh --real --quick
    step "real OpenStack: the load-balancer benchmark still runs against it (2 Services, about 1 min)"
    scripts/bench.sh --lb --quick
    step "real OpenStack: the live config benchmark still runs against it (5 edits, about 20 s)"
    scripts/bench.sh --live-config --quick
    step "real Kubernetes: the operator benchmark still runs against it (2 edits, about 1 min)"
    scripts/bench.sh --operator --quick
    step "real Kubernetes and OpenStack: the operator's CCM benchmark still runs (2 edits, about 2 min)"
    scripts/bench.sh --operator-ccm --quick
    step "real OpenStack: the CCM from the container image initializes a real node"
    scripts/image.sh --test-openstack "$env_file"
  fi
  check_leaks
  stop_started
  trap - EXIT
  if [ ${#filter[@]} -eq 0 ]; then
    # Last, after what this run started is stopped: the soak brings a stack of its own (its
    # tokens revoked, its Octavia API restarted mid-run) and stops it again (README "Chaos
    # soak"); it fails on any orphan, duplicate or touched decoy.
    step "chaos soak, short form (scripts/soak.sh --minutes 3 --services 8, about 9 min)"
    scripts/soak.sh --minutes 3 --services 8
  fi
fi
