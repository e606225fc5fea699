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
