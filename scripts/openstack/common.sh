# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared by scripts/openstack-up.sh and scripts/openstack-down.sh (sourced, never run).
# Settings (all overridable from the environment) and paths; the process and wait helpers are
# scripts/lib/services.sh, shared with the Kubernetes stack.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OS_SCRIPTS=$REPO/scripts/openstack
PY=/usr/bin/python3 # Debian's python: the OpenStack packages live there, not in a pyenv/venv python

OPENSTACK_DIR=${OPENSTACK_DIR:-$REPO/target/openstack}
case $OPENSTACK_DIR in /*) ;; *) OPENSTACK_DIR=$PWD/$OPENSTACK_DIR ;; esac
RUN=$OPENSTACK_DIR/run
# Ports: OPENSTACK_PORT_BASE + a fixed offset each, unless set one by one (the HTTPS fronts:
# each API's port + 20). Without any port
# setting, a running stack keeps the base it recorded, and openstack-up.sh moves to the next free
# base (25100, 25200, ...) when 25000's ports are taken by something else.
PORTS_CHOSEN=$(compgen -v | grep -E '^OPENSTACK_(PORT_BASE|[A-Z_]+_PORT)$' || true)
set_ports() {
  OPENSTACK_PORT_BASE=$1
  KEYSTONE_PORT=${OPENSTACK_KEYSTONE_PORT:-$((OPENSTACK_PORT_BASE + 0))}
  RABBIT_PORT=${OPENSTACK_RABBIT_PORT:-$((OPENSTACK_PORT_BASE + 1))}
  RABBIT_DIST_PORT=${OPENSTACK_RABBIT_DIST_PORT:-$((OPENSTACK_PORT_BASE + 2))}
  EPMD_PORT=${OPENSTACK_EPMD_PORT:-$((OPENSTACK_PORT_BASE + 3))}
  PLACEMENT_PORT=${OPENSTACK_PLACEMENT_PORT:-$((OPENSTACK_PORT_BASE + 4))}
  GLANCE_PORT=${OPENSTACK_GLANCE_PORT:-$((OPENSTACK_PORT_BASE + 5))}
  NEUTRON_PORT=${OPENSTACK_NEUTRON_PORT:-$((OPENSTACK_PORT_BASE + 6))}
  NOVA_PORT=${OPENSTACK_NOVA_PORT:-$((OPENSTACK_PORT_BASE + 7))}
  OCTAVIA_PORT=${OPENSTACK_OCTAVIA_PORT:-$((OPENSTACK_PORT_BASE + 8))}
  # rabbitmqctl's own Erlang node takes a port from this range (by default dist port + 10000).
  RABBIT_CTL_PORT_MIN=${OPENSTACK_RABBIT_CTL_PORT:-$((OPENSTACK_PORT_BASE + 10))}
  RABBIT_CTL_PORT_MAX=$((RABBIT_CTL_PORT_MIN + 9))
  ALL_PORTS=("$KEYSTONE_PORT" "$RABBIT_PORT" "$RABBIT_DIST_PORT" "$EPMD_PORT" "$PLACEMENT_PORT"
    "$GLANCE_PORT" "$NEUTRON_PORT" "$NOVA_PORT" "$OCTAVIA_PORT")
  for ((p = RABBIT_CTL_PORT_MIN; p <= RABBIT_CTL_PORT_MAX; p++)); do ALL_PORTS+=("$p"); done
  # The HTTPS fronts of the APIs (scripts/openstack/tls.sh): each plain port + TLS_PORT_OFFSET.
  HTTP_PORTS=("$KEYSTONE_PORT" "$PLACEMENT_PORT" "$GLANCE_PORT" "$NEUTRON_PORT" "$NOVA_PORT"
    "$OCTAVIA_PORT")
  for p in "${HTTP_PORTS[@]}"; do ALL_PORTS+=("$((p + TLS_PORT_OFFSET))"); done
  KEYSTONE_URL=http://127.0.0.1:$KEYSTONE_PORT/v3
  OCTAVIA_URL=http://127.0.0.1:$OCTAVIA_PORT
  RABBIT_URL=rabbit://ccm:$RABBIT_PASSWORD@127.0.0.1:$RABBIT_PORT/
}
TLS_PORT_OFFSET=20
COMPUTE_HOST=${OPENSTACK_COMPUTE_HOST:-ccm-compute-1}
TIMEOUT=${OPENSTACK_TIMEOUT:-300} # seconds, for each wait

ADMIN_PASSWORD=ccm-admin-secret
SERVICE_PASSWORD=ccm-service-secret
RABBIT_PASSWORD=ccm-rabbit-secret
if [ -n "$PORTS_CHOSEN" ] || [ ! -s "$RUN/port-base" ]; then
  set_ports "${OPENSTACK_PORT_BASE:-25000}"
else
  set_ports "$(<"$RUN/port-base")"
fi
LOG=$OPENSTACK_DIR/log
ENV_FILE=$OPENSTACK_DIR/env

# Processes in the order they start; openstack-down.sh stops them in reverse.
SERVICES=(epmd rabbitmq keystone neutron-server placement glance-api
  nova-conductor nova-scheduler nova-compute nova-api)
# A real Octavia (scripts/openstack/octavia.sh) unless OPENSTACK_OCTAVIA=0; openstack-down.sh
# stops it whenever its PID files exist.
OCTAVIA=${OPENSTACK_OCTAVIA:-1}
[ "$OCTAVIA" != 0 ] || OCTAVIA=""
OCTAVIA_SERVICES=(octavia-api octavia-worker)
if [ -n "$OCTAVIA" ]; then SERVICES+=("${OCTAVIA_SERVICES[@]}"); fi
# The TLS front (scripts/openstack/tls.sh), last: it only forwards to the others.
SERVICES+=(nginx)

# Marks what the scripts start (inherited by every child): makes `ps e` output attributable.
export CCM_OPENSTACK_STACK=$OPENSTACK_DIR

STACK=openstack
TIMEOUT_VAR=OPENSTACK_TIMEOUT
SERVICE_LOG_EXT=out
SERVICE_ENV=()
# shellcheck source=scripts/lib/services.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/services.sh"

http_ok() { curl -fsS -o /dev/null --max-time 10 "$1"; }
# The same over HTTPS, trusting only the stack's own CA (scripts/openstack/tls.sh).
https_ok() { curl -fsS -o /dev/null --max-time 10 --cacert "$OPENSTACK_DIR/tls/ca.pem" "$1"; }
