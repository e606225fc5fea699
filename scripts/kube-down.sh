#!/usr/bin/env bash
# Stop the test cluster that scripts/kube-up.sh started, and only that: the kubelet, the pods'
# tasks through containerd (so that their shims exit), containerd, the controller-manager, the
# API server and etcd, each by the PID file it wrote (checked against the process start time),
# with every process of its session and its descendants; SIGTERM first, SIGKILL after
# $KUBE_STOP_TIMEOUT seconds (default 30). Then what kube-up.sh made outside its processes: the
# mounts under the kubelet's directory and the kubelet's cgroups.
# Exits non-zero if anything it started is still alive or mounted at the end. Keeps $KUBE_DIR
# (logs); the build caches stay where they are.
set -euo pipefail
# shellcheck source=scripts/kube/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/kube/common.sh"
STOP_TIMEOUT=${KUBE_STOP_TIMEOUT:-30}

[ -d "$RUN" ] || exit 0
rm -f "$RUN/ready"

# Every task (pod sandbox and container) containerd runs: killed and deleted, then the
# containers, so that the shims exit and runc removes the containers' cgroups.
stop_tasks() {
  local id tasks
  tasks=$(ctr_k8s tasks ls -q 2>/dev/null) || return 0
  for id in $tasks; do ctr_k8s tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1 || true; done
  for id in $tasks; do
    timeout "$STOP_TIMEOUT" ctr_k8s tasks delete --force "$id" >/dev/null 2>&1 || true
  done
  for id in $(ctr_k8s containers ls -q 2>/dev/null); do
    ctr_k8s containers delete "$id" >/dev/null 2>&1 || true
  done
}

t=$(date +%s)
# shellcheck disable=SC2046 # one PID per word
all=$(process_tree $(service_leaders "${SERVICES[@]}"))
[ -z "$all" ] || log "stopping $(stack_memory)"
stop kubelet
if service_pid containerd >/dev/null; then stop_tasks; fi
stop containerd
stop kube-controller-manager
stop kube-apiserver
stop etcd

# What no leader accounted for (its leader died before): SIGKILL.
strays=$(stragglers)
# shellcheck disable=SC2086 # one word per process
alive=$(still_alive $strays)
if [ -n "$alive" ]; then
  log "killing what dead services left:" \
    "$(ps -o pid=,comm= -p "$(echo "$alive" | paste -sd,)" | paste -sd' ')"
  # shellcheck disable=SC2086
  kill -KILL $alive 2>/dev/null || true
  for _ in $(seq 1 25); do
    # shellcheck disable=SC2086
    [ -n "$(still_alive $strays)" ] || break
    sleep 0.2
  done
  all+=" $strays"
fi

# shellcheck disable=SC2086 # one word per process
left=$(still_alive $all)
if [ -n "$left" ]; then
  ps -o pid,sid,args -p "$(echo "$left" | paste -sd,)" >&2 || true
  die "processes started by kube-up.sh are still running"
fi
for name in "${SERVICES[@]}"; do rm -f "$RUN/$name.pid" "$RUN/$name.start"; done

# What reached the host: the kubelet's volume mounts (through its shared root directory) and
# that shared bind mount itself.
if [ -s "$RUN/shared-mount" ]; then
  root=$(<"$RUN/shared-mount")
  for m in $(mounts_under "$root"); do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  [ -n "$(mounts_under "$root")" ] || rm -f "$RUN/shared-mount"
fi
# The kubelet's cgroup root in every hierarchy, deepest first (empty once the tasks are gone).
if [ -s "$RUN/cgroup-root" ]; then
  root=$(<"$RUN/cgroup-root")
  case $root in
  /ccm-kube-[0-9]*) ;;
  *) die "$RUN/cgroup-root names '$root', not a cgroup of ours" ;;
  esac
  keep=""
  for h in $(cgroup_hierarchies); do
    [ -d "$h$root" ] || continue
    find "$h$root" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ ! -d "$h$root" ] || keep+=" $h$root"
  done
  [ -z "$keep" ] || die "cgroups of the kubelet could not be removed:$keep"
  rm -f "$RUN/cgroup-root"
fi
left=$(mounts_under "$KUBE_DIR")
[ -z "$left" ] || die "still mounted under $KUBE_DIR: $(echo "$left" | paste -sd' ')"
if [ -n "$all" ]; then
  echo "down=$(($(date +%s) - t))" >>"$KUBE_DIR/timings"
  log "stopped in $(($(date +%s) - t))s"
fi
