# shellcheck shell=bash
# Octavia for the test stack (sourced by scripts/openstack-up.sh; OPENSTACK_OCTAVIA=0 leaves it out):
# Debian's octavia-api (uwsgi) and octavia-worker (Zed), provider amphora with the no-op
# amphora and compute drivers and the real network driver (real VIP ports), SQLite, the
# stack's RabbitMQ and Keystone.
# Each local workaround is in its own file: octavia_db.py (schema without alembic),
# octavia_sqlite.py (write locking), octavia_worker.py (fully-populated creates), the policy
# below (the stack's member role may use it), and a throwaway CA (required by the flows).

# shellcheck disable=SC2034 # used by openstack-up.sh, which sources this
OCTAVIA_PACKAGES=(octavia-api octavia-worker python3-octaviaclient openssl)

setup_octavia() (
  local d=$OPENSTACK_DIR/octavia c boot_network
  c=$d/certs
  # The (fake) amphorae's boot network must exist for the real network driver: the stack's
  # internal network (the fixtures have made it by now).
  boot_network=$(sed -n 's/^OPENSTACK_INTERNAL_NETWORK_ID=//p' "$ENV_FILE")
  [ -n "$boot_network" ] || die "no OPENSTACK_INTERNAL_NETWORK_ID in $ENV_FILE"
  mkdir -p "$c" "$d/lock"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=ccm-octavia-test-ca \
    -keyout "$c/ca.key" -out "$c/ca.pem" >"$LOG/octavia-ca.out" 2>&1 || die "openssl failed"
  {
    cat <<EOF
[DEFAULT]
transport_url = $RABBIT_URL
use_stderr = false
log_dir = $LOG
[api_settings]
bind_host = 127.0.0.1
bind_port = $OCTAVIA_PORT
api_base_uri = $OCTAVIA_URL
auth_strategy = keystone
# 'octavia' is Octavia's own alias of amphora. Not 'noop_driver': its load balancers stay
# PENDING_CREATE for ever and cannot be deleted.
enabled_provider_drivers = amphora:Amphora with no-op drivers,octavia:Alias of amphora
default_provider_driver = amphora
[database]
connection = sqlite:///$d/octavia.db
[controller_worker]
amphora_driver = amphora_noop_driver
compute_driver = compute_noop_driver
# The real driver: VIP ports are Neutron ports (its amphora plumbing is made no-op in
# octavia_worker.py, since no amphora exists).
network_driver = allowed_address_pairs_driver
image_driver = image_noop_driver
volume_driver = volume_noop_driver
distributor_driver = distributor_noop_driver
loadbalancer_topology = SINGLE
workers = 1
client_ca = $c/ca.pem
amp_boot_network_list = $boot_network
amp_flavor_id = 00000000-0000-0000-0000-000000000000
amp_image_tag = amphora
[certificates]
cert_generator = local_cert_generator
cert_manager = local_cert_manager
ca_certificate = $c/ca.pem
ca_private_key = $c/ca.key
storage_path = $c/store
[haproxy_amphora]
client_cert = $c/ca.pem
server_ca = $c/ca.pem
[health_manager]
heartbeat_key = ccm-test
controller_ip_port_list = 127.0.0.1:5555
[oslo_messaging]
topic = octavia_prov
[oslo_concurrency]
lock_path = $d/lock
[oslo_policy]
policy_file = $d/policy.yaml
[task_flow]
# serial: the parallel engine's threads write SQLite at once in a cascade delete.
engine = serial
jobboard_enabled = false
persistence_connection = sqlite://
[neutron]
region_name = RegionOne
valid_interfaces = public
EOF
    authsection keystone_authtoken octavia
    authsection service_auth octavia
  } >"$d/octavia.conf"
  # Zed's policy wants load-balancer_member / _observer; the stack's user has member and reader
  # (and its application credential keeps the roles it was made with): let those through.
  cat >"$d/policy.yaml" <<'EOF'
"load-balancer:member_and_owner": "(role:load-balancer_member or role:member) and rule:load-balancer:owner"
"load-balancer:observer_and_owner": "(role:load-balancer_observer or role:reader or role:member) and rule:load-balancer:owner"
EOF
  {
    "$PY" "$OS_SCRIPTS/octavia_db.py" --config-file "$d/octavia.conf"
    octavia-db-manage --config-file "$d/octavia.conf" stamp head
    wal "$d/octavia.db"
  } >"$LOG/octavia-db.out" 2>&1 || {
    tail -n 40 "$LOG/octavia-db.out" >&2
    die "octavia database setup failed"
  }
  start_octavia_api
  start_service octavia-worker "$PY" "$OS_SCRIPTS/octavia_worker.py" \
    --config-file "$d/octavia.conf" --log-file "$LOG/octavia-worker.log"
)

# Octavia's API (uwsgi) on its port, with the configuration setup_octavia wrote; also what
# `openstack-up.sh --restart octavia-api` runs after stopping it.
start_octavia_api() {
  start_service octavia-api "${UWSGI[@]}" --http-socket "127.0.0.1:$OCTAVIA_PORT" \
    --wsgi-file "$OS_SCRIPTS/octavia_wsgi.py" \
    --pyargv "--config-file $OPENSTACK_DIR/octavia/octavia.conf"
}
