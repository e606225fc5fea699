#!/usr/bin/env bash
# Start a real Kubernetes control plane and node on 127.0.0.1 for the tests (DESIGN §8, issue
# 25): etcd (Debian), kube-apiserver (RBAC and Node authorization, NodeRestriction, client
# certificates, service-account tokens), kube-controller-manager, containerd and runc (Debian)
# and a kubelet that registers node `localhost`, runs static pods from a directory and pods from
# images imported into its containerd. Kubernetes itself is built from the k8s.io/kubernetes Go
# module pinned in scripts/kube/go.mod (scripts/kube/build.sh; caches outside the clone).
#
#   scripts/kube-up.sh            install what is missing (apt, as root), build, start
#   scripts/kube-up.sh --status   exit 0 when the stack is running and answering
#   scripts/kube-up.sh --fresh-node [external]
#                                 on the running stack: stop the kubelet, delete its Node and
#                                 start it again, so that it registers afresh; with `external`
#                                 as a cloud node (--cloud-provider=external: tainted
#                                 node.cloudprovider.kubernetes.io/uninitialized until a CCM
#                                 initializes it), without it as kube-up.sh starts it (no cloud)
#   scripts/kube-down.sh          stop it
#   scripts/kube/smoke.sh ENV     prove it (RBAC, node, static pod, imported image, tokens)
#
# Everything lives under $KUBE_DIR (default target/kube): certificates, configs, etcd's data,
# the kubelet's and containerd's directories, logs, PID files, and env (KEY=value lines, for
# the tests; scripts/kube/README.md lists the keys). The path of env is the only thing printed
# on stdout. A second run reuses a running stack. Ports: $KUBE_PORT_BASE (default 26000) +0
# etcd, +1 etcd peer, +2 kube-apiserver, +3 kube-controller-manager, +4 kubelet, +5 kubelet
# healthz, +6 containerd's CRI streaming; with no KUBE_PORT_BASE and a port of 26000's range
# taken, the next free range (26100, 26200, ...) is used. Needs root (mounts, cgroups); the
# kubelet's sysctl writes and its mounts stay in mount namespaces of its own.
set -euo pipefail
# shellcheck source=scripts/kube/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/kube/common.sh"
# shellcheck source=scripts/kube/pki.sh
. "$KUBE_SCRIPTS/pki.sh"

PACKAGES=(etcd-server containerd runc containernetworking-plugins umoci jq curl openssl
  util-linux podman skopeo)
# Files the kubelet writes below /proc/sys at start (component-helpers node/util/sysctl): it
# gets private copies, bind-mounted over them in its own mount namespace.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
  kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
# Host paths the kubelet (/var/lib/kubelet/device-plugins, /var/log/containers) and containerd
# (/run/containerd/s, its shims' sockets) write to whatever their configuration says: in their
# namespaces, an overlay over the parent directory whose upper layer is ours. /etc is overlaid
# in both so that /etc/kubernetes can be made there (not on the host) and $ETC_KUBERNETES
# mounted over it (ETC_BIND).
KUBELET_OVERLAYS=(/var/lib /var/log /etc)
CONTAINERD_OVERLAYS=(/run /etc)
ETC_BIND=(--bind-dir "$ETC_KUBERNETES" /etc/kubernetes)

FRESH_NODE="" KUBELET_CLOUD_PROVIDER=""
case ${1:-} in
--status) ;;
--fresh-node)
  FRESH_NODE=1
  case ${2:-} in
  external) KUBELET_CLOUD_PROVIDER=external ;;
  "") ;;
  *) die "--fresh-node takes 'external' or nothing, not '$2'" ;;
  esac
  ;;
"") ;;
-h | --help)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
  ;;
*) die "unknown argument '$1' (see --help)" ;;
esac

# Settings that must match for a running stack to be reused.
stack_conf() {
  echo "dir=$KUBE_DIR base=$KUBE_PORT_BASE version=$KUBE_VERSION bin=$KUBE_BIN conf=3"
}

node_ready() {
  [ "$("$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

stack_healthy() {
  local name
  [ -s "$ENV_FILE" ] && [ -f "$RUN/ready" ] || return 1
  [ "$(cat "$RUN/ready")" = "$(stack_conf)" ] || return 1
  for name in "${SERVICES[@]}"; do service_pid "$name" >/dev/null || return 1; done
  api_curl -o /dev/null "$API_URL/readyz" &&
    curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" &&
    ctr_k8s version >/dev/null && node_ready
}

if [ "${1:-}" = --status ]; then
  if stack_healthy; then
    echo "running: $(stack_memory); env: $ENV_FILE" >&2
    exit 0
  fi
  echo "not running (or not answering) under $KUBE_DIR" >&2
  exit 1
fi

[ "$(id -u)" = 0 ] || die "kube-up.sh needs root: the kubelet and containerd mount, and make cgroups"
for dir in "${KUBELET_OVERLAYS[@]}" "${CONTAINERD_OVERLAYS[@]}" /var/run; do
  case $KUBE_DIR/ in "$dir"/*)
    die "KUBE_DIR cannot be under $dir (the kubelet and containerd see an overlay there)" ;;
  esac
done

# in-namespace.sh arguments: an overlay over each host directory given, its upper layer ours.
overlays() {
  local dir
  for dir in "$@"; do printf '%s\n' --overlay "$dir" "$KUBE_DIR/host$dir"; done
}
# ---------------------------------------------------------------------------------------- etcd
start_etcd() {
  start_service etcd etcd --name ccm-kube --data-dir "$KUBE_DIR/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "ccm-kube=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    --cert-file "$PKI/etcd-server.crt" --key-file "$PKI/etcd-server.key" \
    --client-cert-auth --trusted-ca-file "$PKI/etcd-ca.crt" --logger zap --log-outputs stderr
}
etcd_healthy() {
  curl -fsS --max-time 5 --cacert "$PKI/etcd-ca.crt" --cert "$PKI/apiserver-etcd-client.crt" \
    --key "$PKI/apiserver-etcd-client.key" "$ETCD_URL/health" | grep -q '"health":"true"'
}

# ------------------------------------------------------------------------------ control plane
# Every request the API server answers, one JSON line each (user, verb, resource, code): the
# tests judge RBAC refusals, the generated roles' minimality and request counts from it.
# Metadata level (no bodies: Secrets stay out of the log); the control plane's own lease
# renewals are left out to keep it small.
audit_policy() {
  cat <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [system:kube-controller-manager, "system:node:$NODE_NAME", system:apiserver]
  verbs: [get, update, patch]
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
EOF
}

start_apiserver() {
  audit_policy >"$KUBE_DIR/audit-policy.yaml"
  start_service kube-apiserver "$KUBE_BIN/kube-apiserver" \
    --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" --cert-dir="$KUBE_DIR/apiserver" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --etcd-servers="$ETCD_URL" --etcd-cafile="$PKI/etcd-ca.crt" \
    --etcd-certfile="$PKI/apiserver-etcd-client.crt" --etcd-keyfile="$PKI/apiserver-etcd-client.key" \
    --client-ca-file="$PKI/client-ca.crt" \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client --requestheader-username-headers=X-Remote-User \
    --requestheader-group-headers=X-Remote-Group --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
    --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --service-account-issuer="$SA_ISSUER" \
    --service-account-key-file="$PKI/service-account.pub" \
    --service-account-signing-key-file="$PKI/service-account.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --endpoint-reconciler-type=none \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/server-ca.crt" \
    --kubelet-preferred-address-types=Hostname \
    --audit-policy-file="$KUBE_DIR/audit-policy.yaml" --audit-log-path="$AUDIT_LOG" \
    --audit-log-format=json --audit-log-maxsize=200 --audit-log-maxbackup=1 \
    --allow-privileged=true --profiling=false --v=1
}

start_controller_manager() {
  local kc=$KUBE_DIR/kube-controller-manager.kubeconfig
  kubeconfig system:kube-controller-manager kube-controller-manager >"$kc"
  start_service kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
    --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
    --service-account-private-key-file="$PKI/service-account.key" \
    --root-ca-file="$PKI/server-ca.crt" --use-service-account-credentials=true \
    --cluster-signing-cert-file="$PKI/client-ca.crt" \
    --cluster-signing-key-file="$PKI/client-ca.key" \
    --cluster-name=ccm-kube --profiling=false --v=1
}

# ----------------------------------------------------------------------------------- containerd
start_containerd() {
  local d=$CONTAINERD_DIR
  mkdir -p "$d/root" "$d/state" "$d/runc" "$d/opt" "$KUBE_DIR/cni/net.d"
  # Loopback only: the node is Ready and hostNetwork pods run; pods with a network of their
  # own would need a bridge or ptp network in namespaces of ours (not done).
  cat >"$KUBE_DIR/cni/net.d/99-loopback.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "ccm-kube-loopback", "plugins": [{"type": "loopback"}]}
EOF
  cat >"$d/config.toml" <<EOF
# written by scripts/kube-up.sh: the test cluster's containerd
version = 2
root = "$d/root"
state = "$d/state"
oom_score = 0
# aufs would modprobe; the others cannot work here
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "$CRI_STREAM_PORT"
  sandbox_image = "$PAUSE_IMAGE"
  # no CAP_SYS_RESOURCE in this VM: runc cannot lower oom_score_adj (sandboxes failed with
  # "can't get final child's PID from pipe")
  restrict_oom_score_adj = true
  enable_selinux = false
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$d/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$KUBE_DIR/cni/net.d"
EOF
  local ns
  mapfile -t ns < <(overlays "${CONTAINERD_OVERLAYS[@]}")
  ns+=("${ETC_BIND[@]}")
  # Its own mount namespace: the shims' sockets (always under /run/containerd/s) and every
  # container's rootfs mount stay there and go when the last of its processes ends.
  start_service containerd unshare --mount --propagation unchanged -- \
    "$KUBE_SCRIPTS/in-namespace.sh" "${ns[@]}" -- containerd --config "$d/config.toml"
}

# The pause image: the pause binary (scripts/kube/pause), user 65535, as an OCI layout.
pause_image() {
  local layout=$KUBE_DIR/images/pause bundle=$KUBE_DIR/images/pause.bundle tag=${PAUSE_IMAGE##*:}
  rm -rf "$layout" "$bundle"
  mkdir -p "$KUBE_DIR/images"
  {
    umoci init --layout "$layout" &&
      umoci new --image "$layout:$tag" &&
      umoci unpack --image "$layout:$tag" "$bundle" &&
      install -m 0755 "$KUBE_BIN/pause" "$bundle/rootfs/pause" &&
      umoci repack --image "$layout:$tag" "$bundle" &&
      umoci config --image "$layout:$tag" --os linux --architecture amd64 \
        --config.entrypoint /pause --config.user 65535:65535 &&
      umoci gc --layout "$layout"
  } >"$LOG/pause-image.log" 2>&1 || {
    cat "$LOG/pause-image.log" >&2
    die "building the pause image failed"
  }
  rm -rf "$bundle"
  import_image "$layout" "$tag" "$PAUSE_IMAGE" >>"$LOG/pause-image.log" 2>&1 || {
    cat "$LOG/pause-image.log" >&2
    die "importing the pause image into containerd failed"
  }
}

# -------------------------------------------------------------------------------------- kubelet
# The kubelet's root directory as a shared mount, before containerd's and the kubelet's
# namespaces are made (they copy it as peers): what the kubelet mounts there (volumes) then
# reaches containerd's namespace and the containers. Host mounts are private here (no systemd):
# without this, projected ServiceAccount volumes arrived empty in the containers.
share_kubelet_root() {
  mkdir -p "$KUBELET_ROOT"
  mount --bind "$KUBELET_ROOT" "$KUBELET_ROOT"
  echo "$KUBELET_ROOT" >"$RUN/shared-mount"
  mount --make-rshared "$KUBELET_ROOT"
}

# The cgroup the kubelet puts kubepods under, one per stack (two kubelets sharing /kubepods
# would each remove the other's pod cgroups as orphans), made in every hierarchy; kube-down.sh
# removes it. cpuset needs its CPUs and memory nodes set before anything can join it.
make_cgroup_root() {
  local h
  echo "$CGROUP_ROOT" >"$RUN/cgroup-root"
  for h in $(cgroup_hierarchies); do
    mkdir -p "$h$CGROUP_ROOT"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

start_kubelet() {
  local d=$KUBELET_ROOT kc=$KUBE_DIR/kubelet.kubeconfig ns=() f own cloud=()
  mkdir -p "$d" "$STATIC_POD_DIR" "$KUBE_DIR/pod-logs" "$KUBE_DIR/sysctl"
  kubeconfig "system:node:$NODE_NAME" kubelet >"$kc"
  cat >"$KUBE_DIR/kubelet.yaml" <<EOF
# written by scripts/kube-up.sh: the test cluster's kubelet
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-server.crt
tlsPrivateKeyFile: $PKI/kubelet-server.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/client-ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
staticPodPath: $STATIC_POD_DIR
podLogsDir: $KUBE_DIR/pod-logs
resolvConf: /etc/resolv.conf
# the host's iptables stay as they are (KUBE-FIREWALL, KUBE-IPTABLES-HINT otherwise)
makeIPTablesUtilChains: false
# it would write the sysctls anyway (into its private copies); protectKernelDefaults would fail
protectKernelDefaults: false
# a shared machine's disk, whose fill level is not the test cluster's business: evict only
# when it is full, and never garbage-collect images (they are imported, not pulled: the pause
# image and the project's were removed at 99% and pods could not start again)
evictionHard: {memory.available: 100Mi, nodefs.available: 100Mi, imagefs.available: 100Mi}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
shutdownGracePeriod: 0s
EOF
  for f in "${SYSCTLS[@]}"; do
    own=$KUBE_DIR/sysctl/${f//\//.}
    cat "/proc/sys/$f" >"$own"
    ns+=(--bind "$own" "/proc/sys/$f")
  done
  mapfile -t -O ${#ns[@]} ns < <(overlays "${KUBELET_OVERLAYS[@]}")
  ns+=("${ETC_BIND[@]}")
  [ -z "$KUBELET_CLOUD_PROVIDER" ] || cloud=(--cloud-provider="$KUBELET_CLOUD_PROVIDER")
  make_cgroup_root
  start_service kubelet unshare --mount --propagation unchanged -- \
    "$KUBE_SCRIPTS/in-namespace.sh" "${ns[@]}" -- \
    "$KUBE_BIN/kubelet" --config="$KUBE_DIR/kubelet.yaml" --kubeconfig="$kc" \
    --hostname-override="$NODE_NAME" --root-dir="$d" --cert-dir="$d/pki" "${cloud[@]}" --v=1
}

# --fresh-node: the kubelet stopped, its Node deleted, the kubelet started again (with or
# without --cloud-provider=external) and Ready. Its pods' containers keep running meanwhile.
fresh_node() {
  local t STOP_TIMEOUT=${KUBE_STOP_TIMEOUT:-30}
  t=$(date +%s)
  stop kubelet
  mv -f "$LOG/kubelet.log" "$LOG/kubelet.previous.log" 2>/dev/null || true
  "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" delete node "$NODE_NAME" --ignore-not-found \
    --wait=true >/dev/null
  start_kubelet
  wait_for kubelet "node $NODE_NAME to be Ready" node_ready
  log "node $NODE_NAME registered afresh in $(($(date +%s) - t))s" \
    "(cloud provider: ${KUBELET_CLOUD_PROVIDER:-none})"
}

# ------------------------------------------------------------------------------------ install
install_packages() {
  local missing=() p t
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} (apt)"
  t=$(date +%s)
  # Package scripts must not start the system-wide etcd (127.0.0.1:2379) or containerd: a
  # policy-rc.d that denies every start, unless the machine already has one.
  local policy=/usr/sbin/policy-rc.d ours=""
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && ours=1
  fi
  local rc=0
  mkdir -p "$KUBE_CACHE_DIR"
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=600 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef \
        -o Dpkg::Options::=--force-confold "${missing[@]}"
  } >"$KUBE_CACHE_DIR/apt.log" 2>&1 || rc=$?
  [ -z "$ours" ] || rm -f $policy
  if [ $rc -ne 0 ]; then
    tail -n 40 "$KUBE_CACHE_DIR/apt.log" >&2
    die "apt-get failed (full log: $KUBE_CACHE_DIR/apt.log)"
  fi
  log "installed in $(($(date +%s) - t))s"
}

# The directory is cleared on every fresh start: never one that holds anything else.
if [ -d "$KUBE_DIR" ] && [ ! -d "$RUN" ] && [ -n "$(ls -A "$KUBE_DIR")" ]; then
  die "$KUBE_DIR is not empty and holds no stack of kube-up.sh; refusing to use it"
fi
install_packages

if [ -n "$FRESH_NODE" ]; then
  # Not stack_healthy: the node may be the very thing that is wrong.
  if ! { [ -f "$RUN/ready" ] && [ "$(cat "$RUN/ready")" = "$(stack_conf)" ] &&
    service_pid containerd >/dev/null && api_curl -o /dev/null "$API_URL/readyz"; }; then
    die "no running stack of this configuration under $KUBE_DIR: (re)start it with scripts/kube-up.sh"
  fi
  export KUBE_HOST_MNTNS
  KUBE_HOST_MNTNS=$(readlink /proc/self/ns/mnt)
  fresh_node
  exit 0
fi
if stack_healthy; then
  log "reusing the running stack under $KUBE_DIR ($(stack_memory))"
  echo "$ENV_FILE"
  exit 0
fi
"$KUBE_SCRIPTS/build.sh" >/dev/null
if [ -d "$RUN" ]; then
  # Whatever is left of an earlier run (processes, mounts, cgroups) goes first.
  "$REPO/scripts/kube-down.sh"
fi

choose_ports 26100 KUBE_PORT_BASE "KUBE_PORT_BASE (now $KUBE_PORT_BASE)"

# A fresh start: nothing of an earlier run is kept but the timings (and never across a mount).
left=$(mounts_under "$KUBE_DIR")
[ -z "$left" ] || die "still mounted under $KUBE_DIR, not clearing it: $(echo "$left" | paste -sd' ')"
if [ -d "$KUBE_DIR" ]; then
  find "$KUBE_DIR" -mindepth 1 -maxdepth 1 ! -name timings -exec rm -rf {} +
fi
mkdir -p "$LOG" "$RUN"
echo "$KUBE_PORT_BASE" >"$RUN/port-base"
T_START=$(date +%s)

# On failure, stop what this run started (the logs stay for reading), in kube-down.sh's order:
# the background jobs are the services themselves, and an API server that loses etcd first
# takes minutes to shut down.
cleanup_on_failure() {
  local rc=$?
  [ $rc -ne 0 ] || return 0
  log "failed: stopping what was started (logs stay in $LOG)"
  "$REPO/scripts/kube-down.sh" || true
  wait 2>/dev/null || true
  exit $rc
}
trap cleanup_on_failure EXIT

export KUBE_HOST_MNTNS
KUBE_HOST_MNTNS=$(readlink /proc/self/ns/mnt)

# --------------------------------------------------------------------------------------- main
log "minting certificates (etcd, server, client and front-proxy CAs) under $PKI"
mint_pki
kubeconfig admin admin >"$ADMIN_KUBECONFIG"

log "starting etcd ($(etcd --version | sed -n 's/^etcd Version: //p')) and containerd"
start_etcd
share_kubelet_root
start_containerd
wait_for etcd "etcd on $ETCD_URL" etcd_healthy

log "starting kube-apiserver $KUBE_VERSION on $API_URL"
start_apiserver
wait_for containerd "containerd on $CONTAINERD_SOCK" ctr_k8s version
pause_image
wait_for kube-apiserver "kube-apiserver's /readyz" api_curl -o /dev/null "$API_URL/readyz"

log "starting kube-controller-manager and the kubelet (node $NODE_NAME)"
start_controller_manager
start_kubelet
wait_for kube-controller-manager "kube-controller-manager's /healthz" \
  curl -fsSk -o /dev/null --max-time 5 "https://127.0.0.1:$KCM_PORT/healthz"
wait_for kubelet "the kubelet's /healthz" \
  curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
wait_for kubelet "node $NODE_NAME to be Ready" node_ready
# Pods need their namespace's default ServiceAccount, which the controller-manager makes.
wait_for kube-controller-manager "the ServiceAccount default/default" \
  "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" get serviceaccount default -n default

cat >"$ENV_FILE" <<EOF
KUBE_VERSION=$KUBE_VERSION
KUBE_DIR=$KUBE_DIR
KUBE_API_URL=$API_URL
KUBE_ADMIN_KUBECONFIG=$ADMIN_KUBECONFIG
KUBE_SERVER_CA_CERT=$PKI/server-ca.crt
KUBE_CLIENT_CA_CERT=$PKI/client-ca.crt
KUBE_CLIENT_CA_KEY=$PKI/client-ca.key
KUBE_SERVICE_ACCOUNT_ISSUER=$SA_ISSUER
KUBE_SERVICE_CIDR=$SERVICE_CIDR
KUBECTL=$KUBECTL
KUBE_BIN_DIR=$KUBE_BIN
KUBE_NODE_NAME=$NODE_NAME
KUBE_KUBELET_URL=https://127.0.0.1:$KUBELET_PORT
KUBE_STATIC_POD_DIR=$STATIC_POD_DIR
KUBE_ETC_KUBERNETES=$ETC_KUBERNETES
KUBE_UP=$REPO/scripts/kube-up.sh
KUBE_BOOTKUBE=$KUBE_SCRIPTS/bootkube.sh
KUBE_CONTAINERD_ADDRESS=$CONTAINERD_SOCK
KUBE_CONTAINERD_NAMESPACE=$CONTAINERD_NS
KUBE_PAUSE_IMAGE=$PAUSE_IMAGE
KUBE_PAUSE_LAYOUT=$KUBE_DIR/images/pause
KUBE_IMPORT_IMAGE=$KUBE_SCRIPTS/import-image.sh
KUBE_ETCD_URL=$ETCD_URL
KUBE_ETCD_CA_CERT=$PKI/etcd-ca.crt
KUBE_ETCD_CLIENT_CERT=$PKI/apiserver-etcd-client.crt
KUBE_ETCD_CLIENT_KEY=$PKI/apiserver-etcd-client.key
KUBE_AUDIT_LOG=$AUDIT_LOG
EOF
stack_conf >"$RUN/ready"
stack_healthy || die "the stack does not answer right after it started (see $LOG)"
trap - EXIT
echo "up=$(($(date +%s) - T_START))" >>"$KUBE_DIR/timings"
log "ready in $(($(date +%s) - T_START))s: $(stack_memory); env: $ENV_FILE"
echo "$ENV_FILE"
