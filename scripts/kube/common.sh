# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared by scripts/kube-up.sh, scripts/kube-down.sh and scripts/kube/*.sh (sourced, never run):
# settings (all overridable from the environment) and paths; the process and wait helpers are
# scripts/lib/services.sh, shared with the OpenStack stack.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KUBE_SCRIPTS=$REPO/scripts/kube

KUBE_DIR=${KUBE_DIR:-$REPO/target/kube}
case $KUBE_DIR in /*) ;; *) KUBE_DIR=$PWD/$KUBE_DIR ;; esac
RUN=$KUBE_DIR/run
LOG=$KUBE_DIR/log
AUDIT_LOG=$LOG/audit.log
ENV_FILE=$KUBE_DIR/env
PKI=$KUBE_DIR/pki

# The release, from the one place that pins it (scripts/kube/go.mod).
KUBE_VERSION=$(sed -n 's/^[[:space:]]*k8s\.io\/kubernetes \(v[0-9][^[:space:]]*\)\( \/\/.*\)\{0,1\}$/\1/p' \
  "$KUBE_SCRIPTS/go.mod" | head -n 1)
[ -n "$KUBE_VERSION" ] || {
  echo "kube: ERROR: no 'k8s.io/kubernetes vX.Y.Z' requirement in $KUBE_SCRIPTS/go.mod" >&2
  exit 1
}
# Build caches and binaries outside the clone, one directory per release, shared by every
# clone and CI run on the machine: $KUBE_CACHE_DIR/<version>/{gomodcache,gocache,bin}.
if [ -z "${KUBE_CACHE_DIR:-}" ]; then
  if [ -n "${XDG_CACHE_HOME:-}" ]; then
    KUBE_CACHE_DIR=$XDG_CACHE_HOME/ccm-assets/kube
  elif [ "$(id -u)" = 0 ]; then
    KUBE_CACHE_DIR=/var/cache/ccm-assets/kube
  else
    KUBE_CACHE_DIR=$HOME/.cache/ccm-assets/kube
  fi
fi
KUBE_BIN=$KUBE_CACHE_DIR/$KUBE_VERSION/bin

# Ports: KUBE_PORT_BASE + a fixed offset each. Without KUBE_PORT_BASE a running stack keeps the
# base it recorded, and kube-up.sh moves to the next free base (26100, 26200, ...) when one of
# 26000's ports is taken by something else.
PORTS_CHOSEN=${KUBE_PORT_BASE:-}
set_ports() {
  KUBE_PORT_BASE=$1
  ETCD_PORT=$((KUBE_PORT_BASE + 0))
  ETCD_PEER_PORT=$((KUBE_PORT_BASE + 1))
  APISERVER_PORT=$((KUBE_PORT_BASE + 2))
  KCM_PORT=$((KUBE_PORT_BASE + 3))
  KUBELET_PORT=$((KUBE_PORT_BASE + 4))
  KUBELET_HEALTHZ_PORT=$((KUBE_PORT_BASE + 5))
  CRI_STREAM_PORT=$((KUBE_PORT_BASE + 6))
  ALL_PORTS=("$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT" "$KUBELET_PORT"
    "$KUBELET_HEALTHZ_PORT" "$CRI_STREAM_PORT")
  API_URL=https://127.0.0.1:$APISERVER_PORT
  ETCD_URL=https://127.0.0.1:$ETCD_PORT
  # The kubelet's cgroup root (its kubepods go below), in every hierarchy: one per stack.
  CGROUP_ROOT=/ccm-kube-$KUBE_PORT_BASE
}
if [ -n "$PORTS_CHOSEN" ] || [ ! -s "$RUN/port-base" ]; then
  set_ports "${KUBE_PORT_BASE:-26000}"
else
  set_ports "$(<"$RUN/port-base")"
fi
TIMEOUT=${KUBE_TIMEOUT:-180} # seconds, for each wait

NODE_NAME=localhost # a loopback node IP is refused by the kubelet; a node named localhost is not
SERVICE_CIDR=10.96.0.0/24
SA_ISSUER=https://kubernetes.default.svc.cluster.local
# The node's /etc/kubernetes: in the kubelet's and containerd's mount namespaces (and the
# bootkube stage's, scripts/kube/bootkube.sh) this directory is bind-mounted over
# /etc/kubernetes, so manifests with hostPath /etc/kubernetes run unchanged and the host's
# /etc/kubernetes is never touched. The static pods are read from its manifests/.
ETC_KUBERNETES=$KUBE_DIR/etc-kubernetes
STATIC_POD_DIR=$ETC_KUBERNETES/manifests
CONTAINERD_DIR=$KUBE_DIR/containerd
CONTAINERD_SOCK=$CONTAINERD_DIR/containerd.sock
CONTAINERD_NS=k8s.io # the namespace of containerd that the CRI plugin (so the kubelet) uses
KUBELET_ROOT=$KUBE_DIR/kubelet
PAUSE_IMAGE=localhost/ccm-assets/pause:$KUBE_VERSION
KUBECTL=$KUBE_BIN/kubectl
ADMIN_KUBECONFIG=$KUBE_DIR/admin.kubeconfig

# Processes in the order they start; kube-down.sh stops them in reverse.
SERVICES=(etcd kube-apiserver kube-controller-manager containerd kubelet)

STACK=kube
TIMEOUT_VAR=KUBE_TIMEOUT
SERVICE_LOG_EXT=log
# Every service carries CCM_KUBE_STACK=$KUBE_DIR in its environment: inherited by everything it
# starts (containerd's shims too, which leave its process tree), it is how kube-down.sh finds
# what a dead leader left behind. Only the services carry it, not these scripts.
SERVICE_ENV=("CCM_KUBE_STACK=$KUBE_DIR")
# shellcheck source=scripts/lib/services.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/services.sh"

# curl as the cluster admin, trusting only the stack's server CA.
api_curl() {
  curl -fsS --max-time 10 --cacert "$PKI/server-ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" "$@"
}

# script_help "$@", first in a script that takes arguments: with -h or --help, its header
# comment (up to `set -euo`) as help and exit 0; with no argument, the same and exit 1.
script_help() {
  case ${1:-} in
  -h | --help | "")
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    [ -n "${1:-}" ]
    exit
    ;;
  esac
}

# use_env_file FILE: the env file (the one scripts/kube-up.sh printed) that env_value reads.
use_env_file() {
  [ -s "$1" ] || die "no env file $1 (scripts/kube-up.sh prints its path)"
  USED_ENV_FILE=$1
}
# env_value KEY: its value in that file (empty when absent).
env_value() { sed -n "s/^$1=//p" "$USED_ENV_FILE" | tail -n 1; }

# ctr against the stack's containerd, in the CRI plugin's namespace.
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace "$CONTAINERD_NS" "$@"; }

# Mounts at or under DIR in this mount namespace, deepest first (/proc/self/mountinfo field 5;
# octal escapes such as \040 for a space are decoded).
mounts_under() {
  local dir=$1
  awk '{ print $5 }' /proc/self/mountinfo | while read -r m; do
    m=$(printf '%b' "$m")
    case $m in "$dir" | "$dir"/*) echo "$m" ;; esac
  done | sort -r
}

# import_image LAYOUT TAG NAME: the image TAG of the OCI layout directory LAYOUT (as
# scripts/image.sh and umoci write them) into the stack's containerd as NAME, unpacked, where the
# kubelet finds it (pods then use `imagePullPolicy: Never`, or IfNotPresent with a tag). The
# manifest, so the image's digest, is kept as it is.
import_image() {
  local layout=$1 tag=$2 name=$3 tmp rc=0
  [ -f "$layout/index.json" ] || die "$layout is not an OCI layout (no index.json)"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/kube-import.XXXXXX")
  # Only TAG's manifest, named for containerd (its io.containerd.image.name annotation wins
  # over the bare tag in org.opencontainers.image.ref.name).
  jq --arg tag "$tag" --arg name "$name" '.manifests |= [.[]
      | select(.annotations["org.opencontainers.image.ref.name"] == $tag)
      | .annotations["io.containerd.image.name"] = $name]' \
    "$layout/index.json" >"$tmp/index.json"
  if [ "$(jq '.manifests | length' "$tmp/index.json")" != 1 ]; then
    rm -rf "$tmp"
    die "$layout has no image tagged '$tag' (tags: $(jq -r '[.manifests[].annotations
      | .["org.opencontainers.image.ref.name"]] | join(" ")' "$layout/index.json"))"
  fi
  cp "$layout/oci-layout" "$tmp/"
  ln -s "$(cd "$layout" && pwd)/blobs" "$tmp/blobs"
  tar -C "$tmp" -chf "$tmp/image.tar" oci-layout index.json blobs &&
    ctr_k8s images import "$tmp/image.tar" || rc=$?
  rm -rf "$tmp"
  return $rc
}

# The mounted cgroup hierarchies (v1 controllers, named ones, the v2 unified one).
cgroup_hierarchies() { awk '$9 ~ /^cgroup2?$/ { print $5 }' /proc/self/mountinfo; }

# Processes of this stack that no recorded leader accounts for (a shim whose containerd died, a
# container whose shim did), as PID:STARTTIME words: those with our CCM_KUBE_STACK mark, and
# those in the kubelet's cgroups.
stragglers() {
  local pid start root h
  {
    grep -lszxF "CCM_KUBE_STACK=$KUBE_DIR" /proc/[0-9]*/environ | cut -d/ -f3 || true
    if [ -s "$RUN/cgroup-root" ]; then
      root=$(<"$RUN/cgroup-root")
      for h in $(cgroup_hierarchies); do
        if [ -d "$h$root" ]; then find "$h$root" -name cgroup.procs -exec cat {} + || true; fi
      done
    fi
  } | sort -un | while read -r pid; do
    [ "$pid" != $$ ] || continue
    if start=$(proc_start "$pid"); then echo "$pid:$start"; fi
  done
}
