#!/usr/bin/env bash
# Start a real OpenStack control plane on 127.0.0.1 for the tests (DESIGN §8, issue 6):
# Keystone, RabbitMQ, Neutron (ML2/openvswitch with a registered fake agent, no dataplane),
# Placement, Glance (file store) and Nova (api, conductor, scheduler, compute with
# fake.FakeDriver), Debian's packages (Zed), SQLite databases, one worker each.
#
#   scripts/openstack-up.sh            install what is missing (apt, as root), start, bootstrap
#   scripts/openstack-up.sh --status   exit 0 when the stack is running and answering
#   scripts/openstack-down.sh          stop it
#   scripts/openstack-up.sh --restart octavia-api [SECONDS]
#                                      stop Octavia's API (SIGTERM by its PID file), keep it
#                                      down SECONDS (default 0), start it again as before and
#                                      wait until it answers (the chaos soak, scripts/soak.sh)
#
# Everything lives under $OPENSTACK_DIR (default target/openstack): configs, databases, logs,
# PID files, and for the tests clouds.yaml and env (KEY=value lines; the README lists the keys).
# The path of env is the only thing printed on stdout. A second run reuses a running stack.
# Ports: $OPENSTACK_PORT_BASE (default 25000) + 0 keystone, +1 amqp, +2 erlang dist, +3 epmd,
# +4 placement, +5 glance, +6 neutron, +7 nova, +8 octavia, +10..+19 rabbitmqctl, and the HTTPS
# front of each API on its port + 20 (nginx with a private CA: scripts/openstack/tls.sh, keys
# OPENSTACK_TLS_* and OPENSTACK_CA_FILE in env, cloud ccm-tls in clouds.yaml); each has its own
# OPENSTACK_*_PORT override (scripts/openstack/common.sh). With no port setting and 25000's
# range taken, the next free range (25100, 25200, ...) is used; the env file has the URLs.
set -euo pipefail
# shellcheck source=scripts/openstack/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/openstack/common.sh"
# shellcheck source=scripts/openstack/octavia.sh
. "$OS_SCRIPTS/octavia.sh"
# shellcheck source=scripts/openstack/tls.sh
. "$OS_SCRIPTS/tls.sh"

PACKAGES=(keystone python3-openstackclient python3-openstacksdk uwsgi-core uwsgi-plugin-python3
  rabbitmq-server placement-api glance-api neutron-server
  nova-api nova-conductor nova-scheduler nova-compute curl "${TLS_PACKAGES[@]}")
if [ -n "$OCTAVIA" ]; then PACKAGES+=("${OCTAVIA_PACKAGES[@]}"); fi

case ${1:-} in
--status) ;;
--restart) [ "${2:-}" = octavia-api ] || die "--restart takes octavia-api (the only one)" ;;
"") ;;
-h | --help)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
  ;;
*) die "unknown argument '$1' (see --help)" ;;
esac

# Settings that must match for a running stack to be reused.
stack_conf() {
  echo "dir=$OPENSTACK_DIR ports=$KEYSTONE_PORT,$RABBIT_PORT,$RABBIT_DIST_PORT,$EPMD_PORT,$PLACEMENT_PORT,$GLANCE_PORT,$NEUTRON_PORT,$NOVA_PORT,$RABBIT_CTL_PORT_MIN host=$COMPUTE_HOST octavia=$OCTAVIA tls=$TLS_PORT_OFFSET version=4"
}

stack_healthy() {
  local name
  [ -s "$ENV_FILE" ] && [ -f "$RUN/ready" ] || return 1
  [ "$(cat "$RUN/ready")" = "$(stack_conf)" ] || return 1
  for name in "${SERVICES[@]}"; do service_pid "$name" >/dev/null || return 1; done
  http_ok "$KEYSTONE_URL" && http_ok "http://127.0.0.1:$PLACEMENT_PORT/" &&
    http_ok "http://127.0.0.1:$GLANCE_PORT/versions" &&
    http_ok "http://127.0.0.1:$NEUTRON_PORT/" && http_ok "http://127.0.0.1:$NOVA_PORT/" &&
    port_in_use "$RABBIT_PORT" && { [ -z "$OCTAVIA" ] || http_ok "$OCTAVIA_URL/"; } &&
    https_ok "$(tls_url "$KEYSTONE_URL")"
}

# uwsgi in the foreground (its master is the PID we record). One process, one thread: SQLite
# connections must not cross threads. 'Connection: close' because uwsgi's plain http-socket
# drops kept-alive connections that keystoneauth would reuse (Connection reset by peer).
UWSGI=(uwsgi --plugins python3 --master --processes 1 --threads 1 --lazy-apps --die-on-term
  --no-orphans --buffer-size 65535 --add-header 'Connection: close' --need-app)

if [ "${1:-}" = --restart ]; then
  stack_healthy || die "no healthy stack under $OPENSTACK_DIR to restart octavia-api in"
  # shellcheck disable=SC2034 # read by stop (scripts/lib/services.sh)
  STOP_TIMEOUT=${OPENSTACK_STOP_TIMEOUT:-30}
  log "stopping octavia-api"
  stop octavia-api
  sleep "${3:-0}"
  log "starting octavia-api"
  start_octavia_api
  wait_for octavia-api "Octavia on $OCTAVIA_URL" http_ok "$OCTAVIA_URL/"
  exit 0
fi

if [ "${1:-}" = --status ]; then
  if stack_healthy; then
    echo "running: $(stack_memory); env: $ENV_FILE" >&2
    exit 0
  fi
  echo "not running (or not answering) under $OPENSTACK_DIR" >&2
  exit 1
fi

# ------------------------------------------------------------------------------------ install
install_packages() {
  local missing=() p t
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing Debian packages: ${missing[*]}; install them as root:
  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  log "installing ${missing[*]} (apt, a few minutes on a fresh machine)"
  t=$(date +%s)
  # Package scripts must not start the system-wide services (RabbitMQ would take 0.0.0.0:5672,
  # Keystone :5000): a policy-rc.d that denies every start, unless the machine already has one.
  local policy=/usr/sbin/policy-rc.d ours=""
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && ours=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
  } >"$LOG/apt.log" 2>&1 || rc=$?
  [ -z "$ours" ] || rm -f $policy
  if [ $rc -ne 0 ]; then
    tail -n 40 "$LOG/apt.log" >&2
    die "apt-get failed (full log: $LOG/apt.log)"
  fi
  echo "install=$(($(date +%s) - t))" >>"$OPENSTACK_DIR/timings"
  log "installed in $(($(date +%s) - t))s"
}

# The directory is cleared on every fresh start: never one that holds anything else.
if [ -d "$OPENSTACK_DIR" ] && [ ! -d "$RUN" ] && [ -n "$(ls -A "$OPENSTACK_DIR")" ]; then
  die "$OPENSTACK_DIR is not empty and holds no stack of openstack-up.sh; refusing to use it"
fi
mkdir -p "$LOG" "$RUN"
install_packages

if stack_healthy; then
  log "reusing the running stack under $OPENSTACK_DIR ($(stack_memory))"
  echo "$ENV_FILE"
  exit 0
fi
for name in "${SERVICES[@]}"; do
  if service_pid "$name" >/dev/null; then
    log "a partial or unhealthy stack is running: stopping it first"
    "$REPO/scripts/openstack-down.sh"
    break
  fi
done

choose_ports 25100 OPENSTACK_PORT_BASE \
  "OPENSTACK_PORT_BASE (now $OPENSTACK_PORT_BASE) or OPENSTACK_*_PORT"

# A fresh start: nothing of an earlier run is kept but the install timing.
find "$OPENSTACK_DIR" -mindepth 1 -maxdepth 1 ! -name timings -exec rm -rf {} +
mkdir -p "$LOG" "$RUN"
echo "$OPENSTACK_PORT_BASE" >"$RUN/port-base"
T_START=$(date +%s)

# On failure, stop what this run started (the logs stay for reading).
cleanup_on_failure() {
  local rc=$? job
  [ $rc -ne 0 ] || return 0
  for job in $(jobs -p); do kill -TERM "$job" 2>/dev/null || true; done
  wait 2>/dev/null || true
  log "failed: stopping what was started (logs stay in $LOG)"
  "$REPO/scripts/openstack-down.sh" || true
  exit $rc
}
trap cleanup_on_failure EXIT

# SQLite in WAL mode (kept in the file): without it a COMMIT sometimes fails with 'database is
# locked' after the 5 s busy timeout while another connection of the same worker holds a read lock.
wal() {
  local f
  for f in "$@"; do
    "$PY" -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' "$f"
  done
}

# keystone_authtoken / service-client sections: authtoken SECTION USER
authsection() {
  cat <<EOF
[$1]
auth_url = $KEYSTONE_URL
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = $2
password = $SERVICE_PASSWORD
region_name = RegionOne
EOF
  case $1 in
  keystone_authtoken)
    echo "www_authenticate_uri = $KEYSTONE_URL"
    echo "service_token_roles_required = true"
    ;;
  *) echo "valid_interfaces = public" ;;
  esac
}

# ----------------------------------------------------------------------------------- rabbitmq
rabbit_env() {
  export HOME=$OPENSTACK_DIR/rabbitmq
  export RABBITMQ_NODENAME=ccm-rabbit@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$RABBIT_PORT RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT
  export RABBITMQ_CTL_DIST_PORT_MIN=$RABBIT_CTL_PORT_MIN RABBITMQ_CTL_DIST_PORT_MAX=$RABBIT_CTL_PORT_MAX
  export RABBITMQ_MNESIA_BASE=$HOME/mnesia RABBITMQ_LOG_BASE=$LOG/rabbitmq
  export RABBITMQ_CONFIG_FILE=$HOME/rabbitmq RABBITMQ_ENABLED_PLUGINS_FILE=$HOME/enabled_plugins
  export RABBITMQ_PID_FILE=$HOME/rabbit.pid RABBITMQ_CONF_ENV_FILE=$HOME/rabbitmq-env.conf
  # Our own epmd on its own port: a system epmd on 4369 (or another stack's) is never touched.
  export ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT=$EPMD_PORT
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

start_rabbitmq() (
  rabbit_env
  mkdir -p "$HOME/mnesia" "$RABBITMQ_LOG_BASE"
  : >"$RABBITMQ_CONF_ENV_FILE"
  echo '[].' >"$RABBITMQ_ENABLED_PLUGINS_FILE"
  cat >"$HOME/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$RABBIT_PORT
default_user = ccm
default_pass = $RABBIT_PASSWORD
loopback_users = none
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 50MB
EOF
  # epmd started here, in the foreground of its own session, so that openstack-down.sh can stop
  # it by PID (an epmd that Erlang starts by itself daemonizes out of reach).
  start_service epmd epmd -port "$EPMD_PORT" -address 127.0.0.1
  wait_for epmd "epmd on 127.0.0.1:$EPMD_PORT" port_in_use "$EPMD_PORT"
  start_service rabbitmq /usr/lib/rabbitmq/bin/rabbitmq-server
  wait_for rabbitmq "RabbitMQ's PID file" test -s "$RABBITMQ_PID_FILE"
  wait_for rabbitmq "RabbitMQ to start" /usr/lib/rabbitmq/bin/rabbitmqctl -q await_startup --timeout 10
  log "rabbitmq ready on 127.0.0.1:$RABBIT_PORT"
)

# ----------------------------------------------------------------------------------- keystone
start_keystone() (
  local d=$OPENSTACK_DIR/keystone
  mkdir -p "$d/fernet-keys" "$d/credential-keys"
  cat >"$d/keystone.conf" <<EOF
[DEFAULT]
log_dir = $LOG
log_file = keystone.log
[database]
connection = sqlite:///$d/keystone.db
[token]
provider = fernet
expiration = ${OPENSTACK_TOKEN_EXPIRATION:-3600}
[fernet_tokens]
key_repository = $d/fernet-keys
max_active_keys = 3
[fernet_receipts]
key_repository = $d/fernet-keys
[credential]
key_repository = $d/credential-keys
[cache]
# in-process cache: an authenticated request takes ~0.03 s instead of ~0.4 s; coherent because
# there is one worker, and keystone invalidates it on its own writes
enabled = true
backend = dogpile.cache.memory
[identity]
# bcrypt cost 4 instead of 12: test databases only
password_hash_rounds = 4
[oslo_policy]
enforce_new_defaults = false
enforce_scope = false
EOF
  local km=(keystone-manage --config-file "$d/keystone.conf")
  {
    "${km[@]}" db_sync
    wal "$d/keystone.db"
    "${km[@]}" fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
    "${km[@]}" credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
    "${km[@]}" bootstrap --bootstrap-password "$ADMIN_PASSWORD" --bootstrap-username admin \
      --bootstrap-project-name admin --bootstrap-role-name admin --bootstrap-region-id RegionOne \
      --bootstrap-admin-url "$KEYSTONE_URL" --bootstrap-internal-url "$KEYSTONE_URL" \
      --bootstrap-public-url "$KEYSTONE_URL"
  } >"$LOG/keystone-manage.out" 2>&1 || {
    tail -n 40 "$LOG/keystone-manage.out" >&2
    die "keystone-manage failed"
  }
  start_service keystone "${UWSGI[@]}" --http-socket "127.0.0.1:$KEYSTONE_PORT" \
    --wsgi-file /usr/bin/keystone-wsgi-public --env "OS_KEYSTONE_CONFIG_FILES=$d/keystone.conf"
  wait_for keystone "Keystone on $KEYSTONE_URL" http_ok "$KEYSTONE_URL"
  log "keystone ready on $KEYSTONE_URL"
)

# ------------------------------------------------------------------------------------ neutron
setup_neutron() (
  local d=$OPENSTACK_DIR/neutron
  mkdir -p "$d/state" "$d/locks"
  {
    cat <<EOF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $NEUTRON_PORT
core_plugin = ml2
service_plugins = router
auth_strategy = keystone
transport_url = $RABBIT_URL
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
state_path = $d/state
log_dir = $LOG
log_file = neutron-server.log
api_paste_config = /usr/share/neutron-common/api-paste.ini
# the fake agent reports once (scripts/openstack/fake-ovs-agent.py): keep it alive for a day
agent_down_time = 86400
# port and floating IP changes reach nova at once (network-changed events), not after its heal
notify_nova_on_port_status_changes = true
notify_nova_on_port_data_changes = true
[database]
connection = sqlite:///$d/neutron.db
[oslo_concurrency]
lock_path = $d/locks
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
# With no mechanism driver every port is binding_failed and nova aborts the build; the real
# openvswitch driver binds ports on hosts with an OVS agent, which fake-ovs-agent.py registers.
mechanism_drivers = openvswitch
extension_drivers = port_security
[ml2_type_vxlan]
vni_ranges = 1:1000
[ml2_type_flat]
flat_networks = external
[quotas]
# Octavia's network driver makes a security group (and rules, and a VIP port) per load
# balancer: the defaults (10 groups, 100 rules, 50 ports) stop the load-balancer benchmark's
# 50 Services at the tenth. A test stack has no quota to protect.
quota_security_group = -1
quota_security_group_rule = -1
quota_port = -1
quota_floatingip = -1
[oslo_policy]
policy_file = $d/policy.yaml
EOF
    authsection keystone_authtoken neutron
    authsection nova nova
  } >"$d/neutron.conf"
  # Neutron lets only admins choose a new floating IP's address; a cloud may grant it to a role,
  # as this one does to the role of stack.py's second user (the CCM's spec.loadBalancerIP).
  cat >"$d/policy.yaml" <<'EOF'
"create_floatingip:floating_ip_address": "rule:admin_only or role:floating-ip-chooser"
EOF
  # 'neutron-db-manage upgrade heads' fails on SQLite ("No support for ALTER of constraints in
  # SQLite dialect"): build the schema from the models, as neutron's own unit tests do, then
  # stamp the migration heads.
  {
    "$PY" -c 'import sys, sqlalchemy as sa
from neutron.db.migration.models import head
head.get_metadata().create_all(sa.create_engine(sys.argv[1]))' "sqlite:///$d/neutron.db"
    neutron-db-manage --config-file "$d/neutron.conf" stamp heads
    wal "$d/neutron.db"
  } >"$LOG/neutron-db.out" 2>&1 || {
    tail -n 40 "$LOG/neutron-db.out" >&2
    die "neutron database setup failed"
  }
  # neutron_server.py: neutron-server retrying SQLite lock conflicts (see its docstring).
  start_service neutron-server "$PY" "$OS_SCRIPTS/neutron_server.py" --config-file "$d/neutron.conf"
)

register_fake_agent() {
  "$PY" "$OS_SCRIPTS/fake-ovs-agent.py" "$OPENSTACK_DIR/neutron/neutron.conf" "$COMPUTE_HOST" \
    >"$LOG/fake-ovs-agent.out" 2>&1
}

# ----------------------------------------------------------------- placement, glance and nova
setup_compute() (
  local d=$OPENSTACK_DIR/placement
  mkdir -p "$d"
  {
    cat <<EOF
[DEFAULT]
log_dir = $LOG
log_file = placement.log
[api]
auth_strategy = keystone
[placement_database]
connection = sqlite:///$d/placement.db
EOF
    authsection keystone_authtoken placement
  } >"$d/placement.conf"
  placement-manage --config-file "$d/placement.conf" db sync >"$LOG/placement-manage.out" 2>&1 || {
    tail -n 40 "$LOG/placement-manage.out" >&2
    die "placement-manage db sync failed"
  }
  wal "$d/placement.db"
  start_service placement "${UWSGI[@]}" --http-socket "127.0.0.1:$PLACEMENT_PORT" \
    --wsgi-file /usr/bin/placement-api --env "OS_PLACEMENT_CONFIG_DIR=$d"

  d=$OPENSTACK_DIR/glance
  mkdir -p "$d/images/staging" "$d/images/tasks" "$d/locks"
  {
    cat <<EOF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $GLANCE_PORT
workers = 1
log_dir = $LOG
log_file = glance-api.log
enabled_backends = fs:file
[database]
connection = sqlite:///$d/glance.db
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = $d/images
[os_glance_staging_store]
filesystem_store_datadir = $d/images/staging
[os_glance_tasks_store]
filesystem_store_datadir = $d/images/tasks
[paste_deploy]
flavor = keystone
config_file = /usr/share/glance-common/glance-api-paste.ini
[oslo_concurrency]
lock_path = $d/locks
EOF
    authsection keystone_authtoken glance
  } >"$d/glance-api.conf"
  glance-manage --config-file "$d/glance-api.conf" db_sync >"$LOG/glance-manage.out" 2>&1 || {
    tail -n 40 "$LOG/glance-manage.out" >&2
    die "glance-manage db_sync failed"
  }
  wal "$d/glance.db"
  start_service glance-api glance-api --config-file "$d/glance-api.conf"

  d=$OPENSTACK_DIR/nova
  mkdir -p "$d/state/instances" "$d/locks"
  # nova-compute gets a config without database sections: it must not touch the databases (with
  # them it logs 'No DB access allowed in nova-compute' errors at start).
  {
    cat <<EOF
[DEFAULT]
transport_url = $RABBIT_URL
compute_driver = fake.FakeDriver
host = $COMPUTE_HOST
my_ip = 127.0.0.1
heal_instance_info_cache_interval = 10
state_path = $d/state
instances_path = $d/state/instances
log_dir = $LOG
enabled_apis = osapi_compute
osapi_compute_listen = 127.0.0.1
osapi_compute_listen_port = $NOVA_PORT
osapi_compute_workers = 1
use_rootwrap_daemon = false
[api]
auth_strategy = keystone
[conductor]
workers = 1
[scheduler]
workers = 1
discover_hosts_in_cells_interval = 2
[wsgi]
api_paste_config = /usr/share/nova-common/api-paste.ini
[oslo_concurrency]
lock_path = $d/locks
[oslo_messaging_notifications]
driver = noop
[glance]
api_servers = http://127.0.0.1:$GLANCE_PORT
[vnc]
enabled = false
EOF
    authsection keystone_authtoken nova
    authsection placement nova
    authsection service_user nova
    authsection neutron nova
  } >"$d/nova-compute.conf"
  {
    cat "$d/nova-compute.conf"
    cat <<EOF
[api_database]
connection = sqlite:///$d/nova_api.db
[database]
connection = sqlite:///$d/nova_cell1.db
EOF
  } >"$d/nova.conf"
  local nm=(nova-manage --config-file "$d/nova.conf")
  {
    "${nm[@]}" api_db sync
    "${nm[@]}" cell_v2 map_cell0 --database_connection "sqlite:///$d/nova_cell0.db"
    "${nm[@]}" cell_v2 create_cell --name cell1 --database_connection "sqlite:///$d/nova_cell1.db" \
      --transport-url "$RABBIT_URL"
    "${nm[@]}" db sync
    wal "$d/nova_api.db" "$d/nova_cell0.db" "$d/nova_cell1.db"
  } >"$LOG/nova-manage.out" 2>&1 || {
    tail -n 40 "$LOG/nova-manage.out" >&2
    die "nova-manage failed"
  }
  local svc
  for svc in conductor scheduler api; do
    start_service "nova-$svc" "nova-$svc" --config-file "$d/nova.conf" --log-file "$LOG/nova-$svc.log"
  done
  start_service nova-compute nova-compute --config-file "$d/nova-compute.conf" \
    --log-file "$LOG/nova-compute.log"
)

# --------------------------------------------------------------------------------------- main
log "starting RabbitMQ and Keystone under $OPENSTACK_DIR"
start_rabbitmq >"$LOG/setup-rabbitmq.out" 2>&1 &
rabbit_job=$!
start_keystone
wait $rabbit_job || {
  cat "$LOG/setup-rabbitmq.out" >&2
  die "RabbitMQ did not start"
}

log "registering service users and the catalog"
catalog=("placement:placement:http://127.0.0.1:$PLACEMENT_PORT"
  "compute:nova:http://127.0.0.1:$NOVA_PORT/v2.1"
  "image:glance:http://127.0.0.1:$GLANCE_PORT"
  "network:neutron:http://127.0.0.1:$NEUTRON_PORT")
if [ -n "$OCTAVIA" ]; then catalog+=("load-balancer:octavia:$OCTAVIA_URL"); fi
# Every endpoint before any service starts: nova and neutron cache the catalog of their service
# token, so an endpoint added later stays unknown to them (EndpointNotFound) until a restart.
tls_urls=(--tls-auth-url "$(tls_url "$KEYSTONE_URL")")
for spec in "${catalog[@]}"; do # TYPE:NAME:URL
  tls_urls+=(--tls-url "${spec%%:*}=$(tls_url "${spec#*:*:}")")
done
"$PY" "$OS_SCRIPTS/stack.py" register --auth-url "$KEYSTONE_URL" --admin-password "$ADMIN_PASSWORD" \
  --service-password "$SERVICE_PASSWORD" "${tls_urls[@]}" "${catalog[@]}" \
  >"$LOG/register.out" 2>&1 || {
  log_tail keystone
  tail -n 40 "$LOG/register.out" >&2
  die "registering the catalog failed"
}

log "starting the TLS front (nginx, private CA under $TLS_DIR)"
start_tls_front "${HTTP_PORTS[@]}"
wait_for nginx "the TLS front of Keystone" https_ok "$(tls_url "$KEYSTONE_URL")"

log "setting up Neutron, Placement, Glance and Nova (databases, then start)"
setup_neutron >"$LOG/setup-neutron.out" 2>&1 &
neutron_job=$!
setup_compute >"$LOG/setup-compute.out" 2>&1 || {
  cat "$LOG/setup-compute.out" >&2
  die "setting up Placement, Glance or Nova failed"
}
wait $neutron_job || {
  cat "$LOG/setup-neutron.out" >&2
  die "setting up Neutron failed"
}

wait_for neutron-server "Neutron on 127.0.0.1:$NEUTRON_PORT" http_ok "http://127.0.0.1:$NEUTRON_PORT/"
log "neutron ready; registering the fake OVS agent of $COMPUTE_HOST"
wait_for neutron-server "the fake OVS agent to register" register_fake_agent
wait_for placement "Placement on 127.0.0.1:$PLACEMENT_PORT" http_ok "http://127.0.0.1:$PLACEMENT_PORT/"
wait_for glance-api "Glance on 127.0.0.1:$GLANCE_PORT" http_ok "http://127.0.0.1:$GLANCE_PORT/versions"
wait_for nova-api "Nova on 127.0.0.1:$NOVA_PORT" http_ok "http://127.0.0.1:$NOVA_PORT/"
for svc in nova-conductor nova-scheduler nova-compute; do
  service_pid "$svc" >/dev/null || {
    log_tail "$svc"
    die "$svc exited"
  }
done
log "APIs answer; waiting for nova-compute to report and be discovered"
if ! "$PY" "$OS_SCRIPTS/stack.py" wait-compute --auth-url "$KEYSTONE_URL" \
  --admin-password "$ADMIN_PASSWORD" --host "$COMPUTE_HOST" --timeout "$TIMEOUT" \
  --discover "nova-manage --config-file $OPENSTACK_DIR/nova/nova.conf cell_v2 discover_hosts" \
  >"$LOG/wait-compute.out" 2>&1; then
  for svc in nova-compute nova-conductor nova-scheduler; do log_tail "$svc"; done
  tail -n 40 "$LOG/wait-compute.out" >&2
  die "nova-compute on $COMPUTE_HOST did not come up"
fi

log "creating projects, users, application credential, networks, flavors and image"
"$PY" "$OS_SCRIPTS/stack.py" fixtures --auth-url "$KEYSTONE_URL" --admin-password "$ADMIN_PASSWORD" \
  --host "$COMPUTE_HOST" --dir "$OPENSTACK_DIR" --scene "$REPO/scripts/openstack_scene.py" \
  --tls-auth-url "$(tls_url "$KEYSTONE_URL")" --ca-file "$TLS_DIR/ca.pem" \
  >"$LOG/fixtures.out" 2>&1 || {
  tail -n 60 "$LOG/fixtures.out" >&2
  for svc in keystone neutron-server glance-api nova-api; do log_tail "$svc"; done
  die "creating the test fixtures failed"
}

if [ -n "$OCTAVIA" ]; then
  log "starting Octavia (no-op amphora, compute and network drivers)"
  setup_octavia >"$LOG/setup-octavia.out" 2>&1 || {
    cat "$LOG/setup-octavia.out" >&2
    die "setting up Octavia failed"
  }
  wait_for octavia-api "Octavia on $OCTAVIA_URL" http_ok "$OCTAVIA_URL/"
  service_pid octavia-worker >/dev/null || {
    log_tail octavia-worker
    die "octavia-worker exited"
  }
  echo "OPENSTACK_LOADBALANCER_URL=$OCTAVIA_URL" >>"$ENV_FILE"
fi

stack_conf >"$RUN/ready"
stack_healthy || die "the stack does not answer right after it started (see $LOG)"
trap - EXIT
echo "up=$(($(date +%s) - T_START))" >>"$OPENSTACK_DIR/timings"
log "ready in $(($(date +%s) - T_START))s: $(stack_memory); env: $ENV_FILE"
echo "$ENV_FILE"
