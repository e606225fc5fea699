#!/usr/bin/env bash
# Benchmarks (never timed tests; figures go to BENCHMARKS.md with the command that made them).
#
#   scripts/bench.sh           full: release build; wall time (hyperfine) and peak RSS (GNU time)
#                              of `create manifests --offline` on every assets/examples/* (cold
#                              directory and no-op rerun) and of `render`; then the divan
#                              micro-benchmarks (cargo bench --bench generator); then the
#                              controller at scale (cargo bench --bench scale: the real binary
#                              against an OpenStack replay and the fake API server, N = 20,
#                              1,000 and 5,000 nodes; about 3 minutes)
#   scripts/bench.sh --generator
#                              only the wall time and peak RSS rows (no divan, no controller);
#                              CCM_BENCH_EXAMPLES=openstack,aws picks examples (default: all)
#   scripts/bench.sh --quick   CI: checks that every benchmark still executes (debug build, one
#                              run each, no figures; the controller at N = 20)
#   scripts/bench.sh --real    only the controller, against the real Keystone, Nova (FakeDriver)
#                              and Neutron of scripts/openstack-up.sh through a counting proxy
#                              (CCM_BENCH_REAL=1 cargo bench --bench scale: N = 5, 20 and 50
#                              servers booted there and deleted after each run; about 8 minutes,
#                              half of it booting servers, plus the stack's start). Uses the stack
#                              CCM_OPENSTACK_ENV names; without it, starts one (or reuses a running
#                              one) and stops what it started. CCM_BENCH_NODES=5,20 picks other N.
#   scripts/bench.sh --real --quick
#                              the same once at N = 2, debug build, no figures (scripts/test.sh
#                              runs it against its stack)
#   scripts/bench.sh --lb      the service controller against the real Octavia (no-op drivers)
#                              and Neutron (cargo bench --bench load_balancers: bursts of 1 and
#                              20 Services, then 50 Services of 3 ports on 20 nodes; time to
#                              ingress, requests and 409/429 answers per create, per node added,
#                              at restart and per resync; then purge of what the controller
#                              made: its time and requests per object; 5 to 15 minutes). The stack as for
#                              --real. CCM_BENCH_SERVICES, CCM_BENCH_BURSTS (1,20) and
#                              CCM_BENCH_LB_CONCURRENCY change the Service counts and
#                              --concurrent-service-syncs.
#   scripts/bench.sh --lb --quick
#                              the same with a burst of 1 and 2 Services, debug build, no figures
#                              (scripts/test.sh runs it against its stack)
#   scripts/bench.sh --live-config
#                              cloud config edits under a running CCM (cargo bench --bench
#                              live_config: swap → first request using the new value over 20
#                              edits, RSS over 1,000 edits; about 20 minutes). The stack as for
#                              --real. CCM_BENCH_EDITS and CCM_BENCH_IDLE_EDITS change the counts.
#   scripts/bench.sh --live-config --quick
#                              2 and 3 edits, debug build, no figures (scripts/test.sh runs it)
#   scripts/bench.sh --operator
#                              `ccm-assets operator` (the release binary, `cargo build --release
#                              -p ccm-assets`) against the real Kubernetes of scripts/kube-up.sh
#                              (cargo bench --bench operator: 5 minutes idle once converged, then
#                              1,000 events of other ConfigMaps of openshift-config, then 50 edits
#                              of cloud-provider-config; edit → cloud-conf event p50/p99, the
#                              operator's requests per edit and writes per idle period from the
#                              audit log, its RSS after each; about 8 minutes). Uses the cluster
#                              CCM_KUBE_ENV names; without it, starts one (or reuses a running
#                              one) and stops what it started. CCM_BENCH_EDITS,
#                              CCM_BENCH_IDLE_EVENTS and CCM_BENCH_IDLE_SECONDS change the counts.
#   scripts/bench.sh --operator --quick
#                              2 edits, 3 events and 5 s idle, debug build, no figures
#                              (scripts/test.sh runs it)
#   scripts/bench.sh --operator-ccm
#                              the CCM that the operator deploys, run by the kubelet from the
#                              image (scripts/image.sh, built first) against the real OpenStack
#                              (cargo bench --bench operator_ccm: 50 edits of [LoadBalancer]
#                              lb-method in cloud-provider-config; edit → the CCM's first
#                              OpenStack request using the new value, p50/p99; about 6 minutes).
#                              Uses the stacks CCM_KUBE_ENV and CCM_OPENSTACK_ENV name; without
#                              them, starts them (or reuses running ones) and stops what it
#                              started. CCM_BENCH_EDITS changes the count.
#   scripts/bench.sh --operator-ccm --quick
#                              2 edits, debug build, the image as it is, no figures
#                              (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick="" real="" lb="" live="" generator="" operator="" operator_ccm=""
for arg in "$@"; do
  case $arg in
  --quick) quick=1 ;;
  --real) real=1 ;;
  --lb) lb=1 ;;
  --live-config) live=1 ;;
  --generator) generator=1 ;;
  --operator) operator=1 ;;
  --operator-ccm) operator_ccm=1 ;;
  *)
    echo "bench.sh: unknown argument '$arg' (see the head of $0)" >&2
    exit 2
    ;;
  esac
done

if [ -n "$operator_ccm" ]; then
  down=() # what this run started, stopped at the end
  # shellcheck disable=SC2317 # run by the trap
  stop_started() { for d in "${down[@]}"; do "$d"; done; }
  trap stop_started EXIT
  if [ -z "${CCM_KUBE_ENV:-}" ]; then
    scripts/kube-up.sh --status >/dev/null 2>&1 || down+=(scripts/kube-down.sh)
    CCM_KUBE_ENV=$(scripts/kube-up.sh) # prints the path of the env file
  fi
  if [ -z "${CCM_OPENSTACK_ENV:-}" ]; then
    scripts/openstack-up.sh --status >/dev/null 2>&1 || down+=(scripts/openstack-down.sh)
    CCM_OPENSTACK_ENV=$(scripts/openstack-up.sh) # prints the path of the env file
  fi
  export CCM_KUBE_ENV CCM_OPENSTACK_ENV
  if [ -n "$quick" ]; then
    CCM_BENCH_EDITS=2 cargo test --locked -q --bench operator_ccm >/dev/null
    printf 'ok  the operator'"'"'s CCM takes cloud config edits live (2 edits)\n'
  else
    scripts/image.sh >/dev/null # the binaries that ship, as the kubelet runs them
    cargo build --locked --release -q -p ccm-assets
    mkdir -p target/bench && cp target/release/ccm-assets target/bench/ccm-assets
    printf '# The operator'"'"'s CCM taking cloud config edits (load: %s)\n\n' \
      "$(uptime | sed 's/.*load average/load average/')"
    CCM_BENCH_BIN=$PWD/target/bench/ccm-assets cargo bench --locked -q --bench operator_ccm
  fi
  exit 0
fi

if [ -n "$operator" ]; then
  if [ -z "${CCM_KUBE_ENV:-}" ]; then
    if ! scripts/kube-up.sh --status >/dev/null 2>&1; then
      trap 'scripts/kube-down.sh' EXIT
    fi
    CCM_KUBE_ENV=$(scripts/kube-up.sh) # prints the path of the env file
  fi
  export CCM_KUBE_ENV
  if [ -n "$quick" ]; then
    CCM_BENCH_EDITS=2 CCM_BENCH_IDLE_EVENTS=3 CCM_BENCH_IDLE_SECONDS=5 cargo test --locked -q \
      --bench operator >/dev/null
    printf 'ok  operator mode against the real API server (2 edits, 3 events, 5 s idle)\n'
  else
    # The binary that ships, copied: `cargo bench` builds ccm-assets again with the features of
    # the dev-dependencies and puts that one at target/release/ccm-assets.
    cargo build --locked --release -q -p ccm-assets
    mkdir -p target/bench && cp target/release/ccm-assets target/bench/ccm-assets
    printf '# Operator mode against the real API server (load: %s)\n\n' \
      "$(uptime | sed 's/.*load average/load average/')"
    CCM_BENCH_BIN=$PWD/target/bench/ccm-assets cargo bench --locked -q --bench operator
  fi
  exit 0
fi

if [ -n "$real$lb$live" ]; then
  if [ -z "${CCM_OPENSTACK_ENV:-}" ]; then
    if ! scripts/openstack-up.sh --status 2>/dev/null; then
      trap 'scripts/openstack-down.sh' EXIT
    fi
    CCM_OPENSTACK_ENV=$(scripts/openstack-up.sh) # prints the path of the env file
  fi
  export CCM_OPENSTACK_ENV
  if [ -n "$live" ]; then
    if [ -n "$quick" ]; then
      CCM_BENCH_EDITS=2 CCM_BENCH_IDLE_EDITS=3 cargo test --locked -q \
        -p openstack-cloud-controller-manager --bench live_config >/dev/null
      printf 'ok  cloud config edits under a running CCM (2 + 3 edits)\n'
    else
      cargo bench --locked -q -p openstack-cloud-controller-manager --bench live_config
    fi
    exit 0
  fi
  if [ -n "$lb" ]; then
    if [ -n "$quick" ]; then
      CCM_BENCH_SERVICES=2 CCM_BENCH_ADOPTED=1 CCM_BENCH_BURSTS=1 cargo test --locked -q -p openstack-cloud-controller-manager \
        --bench load_balancers >/dev/null
      printf 'ok  load balancers against the real Octavia (2 Services)\n'
    else
      cargo bench --locked -q -p openstack-cloud-controller-manager --bench load_balancers
    fi
    exit 0
  fi
  export CCM_BENCH_REAL=1
  if [ -n "$quick" ]; then
    cargo test --locked -q -p openstack-cloud-controller-manager --bench scale >/dev/null
    printf 'ok  controller scale against real OpenStack (N = 2)\n'
  else
    printf '# Controller against real OpenStack (load: %s)\n\n' \
      "$(uptime | sed 's/.*load average/load average/')"
    cargo bench --locked -q -p openstack-cloud-controller-manager --bench scale
  fi
  exit 0
fi

need() { # command, Debian package
  command -v "$1" >/dev/null 2>&1 && return
  apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$2"; }
}
need /usr/bin/time time

# The generator's rows run in a directory on tmpfs (/dev/shm) unless CCM_BENCH_DIR names another
# parent: they measure the generator, not the disk's recent history. ext4 without a journal (the
# root file system of this project's CI machines) skips, when it allocates an inode, every inode
# of the group deleted in the last 1 to 6 minutes, reading each one's inode table block: after
# one series has deleted its ~1,900 files, a cold run there takes 12 ms instead of 3.8, after two
# 21 ms (BENCHMARKS.md, Generator). For the same reason a run's previous output is moved aside,
# never deleted, until the benchmarks end.
parent=${CCM_BENCH_DIR:-}
if [ -z "$parent" ]; then
  parent=${TMPDIR:-/tmp}
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ]; then
    parent=/dev/shm
  fi
fi
work=$(mktemp -d -p "$parent" ccm-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/aside"
aside() { # path; prints a prepare command that moves it aside if it exists
  # shellcheck disable=SC2016 # $EPOCHREALTIME is for the prepare command's shell, each run
  printf '[ ! -e %s ] || mv %s %s/aside/$EPOCHREALTIME' "$1" "$1" "$work"
}

if [ -n "$quick" ]; then
  if [ -z "$generator" ]; then
    cargo test --locked --bench generator -q
    # Without `--bench`, the scale benchmark runs once at N = 20 with short periods.
    cargo test --locked -q -p openstack-cloud-controller-manager --bench scale >/dev/null
    printf 'ok  controller scale (N = 20)\n'
  fi
  bin=target/debug/ccm-assets
  cargo build --locked -q --bin ccm-assets
else
  need hyperfine hyperfine
  cargo build --locked --release -q --bin ccm-assets
  bin=target/release/ccm-assets
fi
bin=$PWD/$bin

# Wall time and peak RSS of one command, as a Markdown table row.
measure() { # label, prepare command, command
  local label=$1 prepare=$2 cmd=$3 rss
  bash -c "$prepare"
  rss=$(/usr/bin/time -f %M bash -c "$cmd" 2>&1 >/dev/null | tail -n 1)
  if [ -n "$quick" ]; then
    printf 'ok  %s\n' "$label"
    return
  fi
  hyperfine --shell=bash --warmup 3 --runs 50 --prepare "$prepare" --export-json "$work/h.json" \
    "$cmd" >/dev/null
  python3 - "$work/h.json" "$label" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("| %s | %.2f ms ± %.2f | %.2f ms | %.1f MiB |" % (
    sys.argv[2], r["mean"] * 1e3, r["stddev"] * 1e3, r["max"] * 1e3, int(sys.argv[3]) / 1024))
PY
}

# Every platform reads credentials even offline: the tests' fixture files in a HOME of our own,
# IBM's API key, and the account ID given (as tests/it/platforms.rs does).
home=$work/home
mkdir -p "$home/.aws" "$home/.azure" "$home/.gcp"
cp tests/fixtures/credentials/aws-credentials "$home/.aws/credentials"
cp tests/fixtures/credentials/osServicePrincipal.json "$home/.azure/"
cp tests/fixtures/credentials/osServiceAccount.json "$home/.gcp/"

if [ -z "$quick" ]; then
  printf '# Generator, in %s (%s)\n\n' "$parent" "$(stat -f -c %T "$work")"
  printf '| command | mean wall | max wall | peak RSS |\n|---|---|---|---|\n'
fi
for example in assets/examples/*/; do
  case ",${CCM_BENCH_EXAMPLES:-$(basename "$example")}," in
  *",$(basename "$example"),"*) ;;
  *) continue ;;
  esac
  name=$(basename "$example")
  dir=$work/$name
  env=(env "HOME=$home" "IC_API_KEY=example-ibm-key")
  [ -f "$example/clouds.yaml" ] && env+=("OS_CLIENT_CONFIG_FILE=$dir/clouds.yaml")
  create="${env[*]} $bin --log-level error create manifests --dir $dir --offline --infra-id demo-x7k2p"
  create+=" --ibm-account-id 0123456789abcdef0123456789abcdef"
  measure "create manifests ($name, cold dir)" "$(aside "$dir") && cp -r $example $dir" "$create"
  measure "create manifests ($name, no-op rerun)" "true" "$create"
  measure "render ($name)" "$(aside "$dir/out")" "$bin --log-level error render --asset-dir $dir --dest-dir $dir/out"
done

if [ -z "$quick$generator" ]; then
  cargo bench --locked --bench generator
  printf '\n# Controller at scale (load: %s)\n\n' "$(uptime | sed 's/.*load average/load average/')"
  cargo bench --locked -q -p openstack-cloud-controller-manager --bench scale
fi
