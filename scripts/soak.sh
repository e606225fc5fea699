#!/usr/bin/env bash
# The chaos soak (issues 28, 35; README "Chaos soak"): the CCM binary against the real Octavia
# and Neutron of a test stack of its own and an API server (the fake one, or with --kube real
# the real kube-apiserver of scripts/kube-up.sh) behind a slow front that delays every list and
# watch answer to the CCM by 0-3 s, while Services are created, changed and deleted at random,
# nodes join, leave and flip Ready, the CCM is SIGKILLed and restarted (at least 5 times, half
# of them right after an Octavia create answered; every planned kill happens), Octavia's API is
# stopped and started once and the CCM's token is revoked under it. Every member list the CCM
# sends Octavia is checked: none may leave out a node that was eligible for 30 s (the start-up
# race of issue 35). Then it checks that every live Service has exactly one load balancer,
# right, that nothing is left of what was deleted, that the decoys are untouched, and that the
# project holds what it held before. The driver is controller/benches/soak (release build).
#
#   scripts/soak.sh [--minutes M] [--services N] [--seed S] [--kube fake|real]
#                   [--kube-delay-max SECONDS]
#                   M minutes of chaos (default 30), N Services at most (default 30), S the
#                   seed of every random decision (default: from the clock; printed); the API
#                   server (default fake); the front's longest delay (default 3, 0: none)
#
# The stack lives in $SOAK_OPENSTACK_DIR (default target/soak-openstack), on the next free port
# range, with Keystone tokens living $SOAK_TOKEN_EXPIRATION seconds (default 300: the CCM renews
# a token at half its life, and more logins than that, the starts and the revocations need are
# a problem; issue 36), and the CCM's current token is revoked a few times mid-run (a token
# gone while in use):
# scripts/openstack-up.sh starts it (or reuses one running there) and scripts/openstack-down.sh
# stops it at the end if this run started it. The stack the other tests share is never touched.
# With --kube real, the real Kubernetes of scripts/kube-up.sh is used the same way (started
# unless it runs, stopped at the end only if this run started it); the soak works in namespace
# `soak` and Nodes named after its servers, and refuses a cluster in use (others' Nodes,
# namespaces, LoadBalancer Services): its CCM acts on every Service and Node of the cluster,
# deleting a NotReady Node whose server its project lacks; never run it beside the tests.
# Everything the run prints also goes to target/soak/report-<seed>-<unix time>.txt, written as
# it goes; the CCM's log is $SOAK_OPENSTACK_DIR/log/soak-occm.log.
# Exit 0 only when everything held; the last stdout line is
#   soak: seed=S services=N creates=C updates=U deletes=D kills=K orphans=O duplicates=P
#         problems=Q lists=L kube=fake|real
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

args=()
while [ $# -gt 0 ]; do
  case $1 in
  --minutes | --services | --seed | --kube | --kube-delay-max)
    [ $# -ge 2 ] || {
      echo "soak.sh: $1 needs a value" >&2
      exit 2
    }
    args+=("$1" "$2")
    shift 2
    ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "soak.sh: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
  esac
done

export OPENSTACK_DIR=${SOAK_OPENSTACK_DIR:-$PWD/target/soak-openstack}
export OPENSTACK_TOKEN_EXPIRATION=${SOAK_TOKEN_EXPIRATION:-300}
kube=fake
for ((i = 0; i < ${#args[@]}; i += 2)); do
  [ "${args[i]}" != --kube ] || kube=${args[i + 1]}
done
case $kube in
fake | real) ;;
*)
  echo "soak.sh: --kube $kube: fake or real" >&2
  exit 2
  ;;
esac

started="" kube_started=""
stop_started() {
  [ -z "$started" ] || scripts/openstack-down.sh >&2 || true
  [ -z "$kube_started" ] || scripts/kube-down.sh >&2 || true
}
trap stop_started EXIT
if ! scripts/openstack-up.sh --status 2>/dev/null; then
  started=1
fi
env_file=$(scripts/openstack-up.sh)
# A stack reused from an earlier run must have the same token lifetime.
lifetime=$(sed -n 's/^expiration = //p' "$OPENSTACK_DIR/keystone/keystone.conf")
if [ "$lifetime" != "$OPENSTACK_TOKEN_EXPIRATION" ]; then
  echo "soak.sh: the stack running in $OPENSTACK_DIR has tokens of ${lifetime}s, not" \
    "${OPENSTACK_TOKEN_EXPIRATION}s: stop it (OPENSTACK_DIR=$OPENSTACK_DIR scripts/openstack-down.sh)" >&2
  exit 1
fi
if [ "$kube" = real ]; then
  scripts/kube-up.sh --status 2>/dev/null || kube_started=1
  CCM_KUBE_ENV=$(scripts/kube-up.sh)
  export CCM_KUBE_ENV
fi
CCM_OPENSTACK_ENV=$env_file CCM_SOAK_LOG=$OPENSTACK_DIR/log/soak-occm.log \
  CCM_SOAK_REPORT_DIR=$PWD/target/soak \
  cargo bench --locked -p openstack-cloud-controller-manager --bench soak -- "${args[@]}"
