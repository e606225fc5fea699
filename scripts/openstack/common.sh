# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared by scripts/openstack-up.sh and scripts/openstack-down.sh (sourced, never run).
# Settings (all overridable from the environment), paths, process and wait helpers.
#
# Every service is started by start_service: in its own session (setsid), so its PID is also its
# process-group and session ID, written to $RUN/NAME.pid with its start time beside it
# ($RUN/NAME.start, from /proc/PID/stat) so a recycled PID is never mistaken for ours. Stopping
# signals that session only; nothing is ever found or stopped by name.

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

T0=${T0:-$(date +%s)}
log() { printf '[openstack +%3ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() {
  printf 'openstack: ERROR: %s\n' "$*" >&2
  exit 1
}

# The 22nd field of /proc/PID/stat (start time in clock ticks since boot); the command name in
# field 2 may hold spaces, so cut after its closing parenthesis.
proc_start() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086 # split on purpose
  set -- $stat
  echo "${20}"
}

# The PID of service NAME if it is the very process the scripts started and still runs.
service_pid() {
  local pid start
  [ -s "$RUN/$1.pid" ] || return 1
  pid=$(<"$RUN/$1.pid")
  start=$(<"$RUN/$1.start") 2>/dev/null || return 1
  [ "$(proc_start "$pid")" = "$start" ] || return 1
  echo "$pid"
}

# start_service NAME CMD...: run CMD in a new session, stdout+stderr to $LOG/NAME.out.
start_service() {
  local name=$1 pid
  shift
  rm -f "$RUN/$name.pid" "$RUN/$name.start"
  # The inner bash writes its own PID, then execs the service: correct whether or not setsid has
  # to fork (it does when the caller leads a process group, as under job control).
  # shellcheck disable=SC2016 # expanded by the inner bash
  setsid bash -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$RUN/$name.pid" "$@" \
    >"$LOG/$name.out" 2>&1 </dev/null &
  for _ in $(seq 1 100); do
    [ -s "$RUN/$name.pid" ] && break
    sleep 0.05
  done
  [ -s "$RUN/$name.pid" ] || die "$name did not start (no PID file)"
  pid=$(<"$RUN/$name.pid")
  proc_start "$pid" >"$RUN/$name.start" || {
    log_tail "$name"
    die "$name exited at once"
  }
}

# Every process the given leaders started, as PID:STARTTIME words: the members of their sessions
# and all their descendants. Descendants matter: Erlang's erl_child_setup, inet_gethost and
# RabbitMQ's disk monitor each call setsid, so they live in sessions of their own.
process_tree() {
  local pid start
  ps -eo pid=,ppid=,sid= | awk -v leaders=" $* " '
    { pid[NR] = $1; ppid[$1] = $2; sid[$1] = $3 }
    END {
      for (i = 1; i <= NR; i++) if (index(leaders, " " sid[pid[i]] " ")) mine[pid[i]] = 1
      do {
        grew = 0
        for (i = 1; i <= NR; i++) {
          p = pid[i]
          if (!(p in mine) && (ppid[p] in mine)) { mine[p] = 1; grew = 1 }
        }
      } while (grew)
      for (p in mine) print p
    }' | while read -r pid; do
    # A process may end between ps and here (a worker, an Erlang helper): skip it, and never
    # let that make the whole pipeline fail under pipefail (down once stopped half-way on it).
    if start=$(proc_start "$pid"); then echo "$pid:$start"; fi
  done
}

# The PID:STARTTIME words given that still name a live process, as PIDs.
still_alive() {
  local w
  for w in "$@"; do
    [ "$(proc_start "${w%%:*}")" = "${w#*:}" ] && echo "${w%%:*}"
  done
  return 0
}

# The recorded PIDs of the given services that are running.
service_leaders() {
  local name pid
  for name in "$@"; do
    pid=$(service_pid "$name") && echo "$pid"
  done
  return 0
}

# Resident memory of every process the scripts started, in MiB, and their number.
stack_memory() {
  local tree pids
  # shellcheck disable=SC2046 # one PID per word
  tree=$(process_tree $(service_leaders "${SERVICES[@]}"))
  pids=$(echo "$tree" | sed 's/:.*//' | paste -sd,)
  if [ -z "$pids" ]; then
    echo "0 MiB in 0 processes"
    return
  fi
  ps -o rss= -p "$pids" | awk '{ s += $1; n++ } END { printf "%d MiB in %d processes\n", s / 1024, n }'
}

# The last lines of a service's logs, for failure messages.
log_tail() {
  local f
  for f in "$LOG/$1".*; do
    [ -s "$f" ] || continue
    printf '\n----- last 40 lines of %s -----\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

# wait_for NAME DESCRIPTION COMMAND...: retry COMMAND until it succeeds, the service dies or
# $TIMEOUT passes; on failure print the service's log tail and exit.
wait_for() {
  local name=$1 what=$2 deadline=$(($(date +%s) + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && ! service_pid "$name" >/dev/null; then
      log_tail "$name"
      die "$name exited while waiting for $what"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      [ -n "$name" ] && log_tail "$name"
      die "timed out after ${TIMEOUT}s waiting for $what (OPENSTACK_TIMEOUT raises the limit)"
    fi
    sleep 0.5
  done
}

http_ok() { curl -fsS -o /dev/null --max-time 10 "$1"; }
# The same over HTTPS, trusting only the stack's own CA (scripts/openstack/tls.sh).
https_ok() { curl -fsS -o /dev/null --max-time 10 --cacert "$OPENSTACK_DIR/tls/ca.pem" "$1"; }

port_in_use() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
