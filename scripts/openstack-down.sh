#!/usr/bin/env bash
# Stop the OpenStack services that scripts/openstack-up.sh started, and only those: each by the
# PID file it wrote (checked against the process start time), with every process in that
# service's session. SIGTERM first, SIGKILL after $OPENSTACK_STOP_TIMEOUT seconds (default 30).
# Exits non-zero if anything it started is still alive at the end. Keeps $OPENSTACK_DIR (logs).
set -euo pipefail
# shellcheck source=scripts/openstack/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/openstack/common.sh"
STOP_TIMEOUT=${OPENSTACK_STOP_TIMEOUT:-30}

[ -d "$RUN" ] || exit 0
rm -f "$RUN/ready"

# stop NAME...: SIGTERM to each leader (it stops its own workers), wait until every process of
# their trees has ended, SIGKILL what is left after $STOP_TIMEOUT seconds.
stop() {
  local leaders tree left deadline
  # shellcheck disable=SC2046 # one PID per word
  leaders=$(service_leaders "$@")
  [ -n "$leaders" ] || return 0
  # shellcheck disable=SC2086 # one PID per word
  tree=$(process_tree $leaders)
  # shellcheck disable=SC2086
  kill -TERM $leaders 2>/dev/null || true
  deadline=$(($(date +%s) + STOP_TIMEOUT))
  # shellcheck disable=SC2086
  while left=$(still_alive $tree) && [ -n "$left" ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$* still running after ${STOP_TIMEOUT}s, SIGKILL: $(echo "$left" | paste -sd' ')"
      # shellcheck disable=SC2086
      kill -KILL $left 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.2
  done
}

t=$(date +%s)
# shellcheck disable=SC2046 # one PID per word
all=$(process_tree $(service_leaders "${SERVICES[@]}" "${OCTAVIA_SERVICES[@]}"))
[ -z "$all" ] || log "stopping $(stack_memory)"
# The TLS front and Octavia first (they use all the others), the OpenStack services together,
# then what they depend on.
stop nginx
stop "${OCTAVIA_SERVICES[@]}"
stop nova-api nova-compute nova-scheduler nova-conductor glance-api placement neutron-server
stop rabbitmq keystone
stop epmd

# shellcheck disable=SC2086 # one word per process
left=$(still_alive $all)
if [ -n "$left" ]; then
  ps -o pid,sid,args -p "$(echo "$left" | paste -sd,)" >&2 || true
  die "processes started by openstack-up.sh are still running"
fi
for name in "${SERVICES[@]}"; do rm -f "$RUN/$name.pid" "$RUN/$name.start"; done
if [ -n "$all" ]; then
  echo "down=$(($(date +%s) - t))" >>"$OPENSTACK_DIR/timings"
  log "stopped in $(($(date +%s) - t))s"
fi
