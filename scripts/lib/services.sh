# shellcheck shell=bash
# Process and wait helpers shared by the test stacks (scripts/openstack/common.sh and
# scripts/kube/common.sh source it; never run). The sourcing file sets first:
#   STACK            the name in log lines and errors (openstack, kube)
#   RUN, LOG         the directories of PID files and of logs
#   SERVICES         the services, in the order they start
#   TIMEOUT          seconds per wait, and TIMEOUT_VAR, the variable that raises it
#   SERVICE_LOG_EXT  the extension of a service's stdout+stderr file in $LOG (out, log)
#   SERVICE_ENV      VAR=value words every service gets in its environment (may be empty)
#   STOP_TIMEOUT     (the down scripts) seconds from SIGTERM to SIGKILL
#
# Every service is started by start_service: in its own session (setsid), so its PID is also its
# process-group and session ID, written to $RUN/NAME.pid with its start time beside it
# ($RUN/NAME.start, from /proc/PID/stat) so a recycled PID is never mistaken for ours. Stopping
# signals that session only; nothing is ever found or stopped by name.

T0=${T0:-$(date +%s)}
log() { printf '[%s +%3ss] %s\n' "$STACK" "$(($(date +%s) - T0))" "$*" >&2; }
die() {
  printf '%s: ERROR: %s\n' "$STACK" "$*" >&2
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

# start_service NAME CMD...: run CMD in a new session with $SERVICE_ENV in its environment,
# stdout+stderr to $LOG/NAME.$SERVICE_LOG_EXT.
start_service() {
  local name=$1 pid
  shift
  rm -f "$RUN/$name.pid" "$RUN/$name.start"
  # The inner bash writes its own PID, then execs the service: correct whether or not setsid has
  # to fork (it does when the caller leads a process group, as under job control).
  # shellcheck disable=SC2016 # expanded by the inner bash
  env "${SERVICE_ENV[@]}" setsid bash -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
    "$RUN/$name.pid" "$@" >"$LOG/$name.$SERVICE_LOG_EXT" 2>&1 </dev/null &
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
# RabbitMQ's disk monitor each call setsid, so they live in sessions of their own; containerd's
# shims leave its process tree but keep its session, and the containers are the shims' children.
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

# Resident memory of every process the scripts started (containers included), in MiB, their
# number, and the three largest.
stack_memory() {
  local tree pids
  # shellcheck disable=SC2046 # one PID per word
  tree=$(process_tree $(service_leaders "${SERVICES[@]}"))
  pids=$(echo "$tree" | sed 's/:.*//' | paste -sd,)
  if [ -z "$pids" ]; then
    echo "0 MiB in 0 processes"
    return
  fi
  ps -o rss=,comm= -p "$pids" | sort -rn | awk '
    { s += $1; n++; if (n <= 3) top = top sprintf("%s%s %d", (n > 1 ? ", " : ""), $2, $1 / 1024) }
    END { printf "%d MiB in %d processes (%s)\n", s / 1024, n, top }'
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
      die "timed out after ${TIMEOUT}s waiting for $what ($TIMEOUT_VAR raises the limit)"
    fi
    sleep 0.3
  done
}

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

port_in_use() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prints the first port of $ALL_PORTS (set_ports fills it) that something listens on, and fails;
# succeeds quietly when all are free.
ports_free() {
  local port
  for port in "${ALL_PORTS[@]}"; do
    if port_in_use "$port"; then
      echo "$port"
      return 1
    fi
  done
}

# Keeps the ports set_ports gave unless one is taken: then, if the user chose them
# ($PORTS_CHOSEN non-empty), dies naming HINT (how to choose others); else moves to the next
# range of 100 from FIRST up to 29900 whose ports are all free, and says so. VAR is the
# variable that sets the first port.
choose_ports() { # FIRST VAR HINT
  local first=$1 var=$2 hint=$3 busy base
  busy=$(ports_free) && return 0
  [ -z "$PORTS_CHOSEN" ] || die "127.0.0.1:$busy is already in use by another process;" \
    "choose other ports with $hint"
  for base in $(seq "$first" 100 29900); do
    set_ports "$base"
    if ports_free >/dev/null; then
      log "127.0.0.1:$busy is in use by another process: using ports $base and up instead"
      return 0
    fi
  done
  die "no free port range between $((first - 100)) and 29999; set $var"
}
