#!/usr/bin/env bash
# Run the generated bootkube stage (ASSET_DIR/bootkube/ccm-bootstrap.sh, DESIGN §6) as
# bootkube.sh runs it on a bootstrap node, for the test cluster's node: with real podman and
# the project's image, in ASSET_DIR, and with /etc/kubernetes being the stack's own
# ($KUBE_ETC_KUBERNETES), where the kubelet of scripts/kube-up.sh reads its static pods.
#
#   scripts/kube/bootkube.sh ENV_FILE ASSET_DIR [LAYOUT:TAG]
#
# ENV_FILE is the one scripts/kube-up.sh printed. LAYOUT:TAG is the image in scripts/image.sh's
# OCI layout (default: ${CARGO_TARGET_DIR:-target}/image/oci:v<version>), the one the kubelet's
# containerd imports too (scripts/kube/import-image.sh): it is turned into a docker-archive
# named as data/images.json names it (skopeo) and `podman load`ed first (no registry is
# reachable), so the stage's `podman run` finds the image the generated stage names.
#
# podman keeps everything under $KUBE_DIR/podman (storage, run state, events, temporary files:
# CONTAINERS_STORAGE_CONF and CONTAINERS_CONF point at configs written there), never in
# /var/lib/containers or /run/containers; the containers' open-files and processes limits are
# set lower than podman's defaults for root (raising them needs CAP_SYS_RESOURCE, which this VM
# lacks); the cgroups podman makes for conmon (/libpod_parent) are removed again when this run
# made them. All of it runs in a mount namespace of its own where /etc, /run, /var/lib and
# /var/tmp are overlays whose upper layers are under $KUBE_DIR/host-bootkube (what skopeo's and
# podman's caches write there stays ours) and $KUBE_ETC_KUBERNETES is mounted over
# /etc/kubernetes: the stage writes exactly where a bootstrap node's stage writes, and the
# host is untouched. bootkube.sh's stage
# helpers (record_service_stage_start, record_service_stage_success) print the stage's
# progress. The stage's own rule applies: once ASSET_DIR/ccm-bootstrap.done exists, a re-run
# does nothing. Exits with the stage's status.
set -euo pipefail
# shellcheck source=scripts/kube/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

script_help "$@"
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  die "usage: scripts/kube/bootkube.sh ENV_FILE ASSET_DIR [LAYOUT:TAG]"
fi
env_file=$1 assets=$(cd "$2" && pwd)
use_env_file "$env_file"
KUBE_DIR=$(env_value KUBE_DIR)
etc_kubernetes=$(env_value KUBE_ETC_KUBERNETES)
[ -n "$etc_kubernetes" ] ||
  die "$env_file has no KUBE_ETC_KUBERNETES: a stack of older scripts; restart it with scripts/kube-up.sh"
[ -f "$assets/bootkube/ccm-bootstrap.sh" ] || die "no bootkube/ccm-bootstrap.sh in $assets"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' "$REPO/Cargo.toml")
source=${3:-${CARGO_TARGET_DIR:-$REPO/target}/image/oci:v$version}
layout=${source%:*}
[ -f "$layout/index.json" ] || die "no OCI layout $layout: build the image with scripts/image.sh"
name=$(jq -r '."ccm-assets"' "$REPO/data/images.json")
for tool in podman skopeo; do
  command -v $tool >/dev/null || die "$tool is missing: scripts/kube-up.sh installs it"
done
[ "$(id -u)" = 0 ] || die "the stage runs as root, as bootkube.sh does (podman, mounts)"

# Once in the namespace (in-namespace.sh refuses to mount anywhere else), this script again.
if [ -z "${CCM_BOOTKUBE_IN_NAMESPACE:-}" ]; then
  export KUBE_HOST_MNTNS CCM_BOOTKUBE_IN_NAMESPACE=1
  KUBE_HOST_MNTNS=$(readlink /proc/self/ns/mnt)
  ns=()
  for d in /etc /run /var/lib /var/tmp; do ns+=(--overlay "$d" "$KUBE_DIR/host-bootkube$d"); done
  exec unshare --mount -- "$KUBE_SCRIPTS/in-namespace.sh" "${ns[@]}" \
    --bind-dir "$etc_kubernetes" /etc/kubernetes -- "$0" "$env_file" "$assets" "$source"
fi

# ---------------------------------------------------------------------- podman, all of it ours
p=$KUBE_DIR/podman
mkdir -p "$p/storage" "$p/run" "$p/tmp" "$p/networks"
cat >"$p/storage.conf" <<EOF
# written by scripts/kube/bootkube.sh: the test cluster's podman storage
[storage]
driver = "overlay"
graphroot = "$p/storage"
runroot = "$p/run"
EOF
cat >"$p/containers.conf" <<EOF
# written by scripts/kube/bootkube.sh (no systemd, no journald here)
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$p/events.log"
tmp_dir = "$p/tmp"
[containers]
# podman's defaults for root (nofile and nproc 1048576+) are refused without CAP_SYS_RESOURCE;
# nproc at this machine's hard limit was refused too. The stage's container runs one process.
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
volume_path = "$p/storage/volumes"
static_dir = "$p/storage/libpod"
[network]
network_config_dir = "$p/networks"
EOF
export CONTAINERS_STORAGE_CONF=$p/storage.conf CONTAINERS_CONF=$p/containers.conf TMPDIR=$p/tmp

rm -f "$p/tmp/image.tar"
skopeo copy --quiet "oci:$source" "docker-archive:$p/tmp/image.tar:$name"
podman load --quiet --input "$p/tmp/image.tar" >&2
rm -f "$p/tmp/image.tar"

# podman (cgroupfs) puts conmon in /libpod_parent/conmon of every hierarchy, and no setting
# moves it (runc cannot run without cgroups; crun refuses this machine's hybrid cgroups): when
# this run made them, they go again when it ends (rmdir: only if empty).
made_cgroups=()
for h in $(cgroup_hierarchies); do
  [ -d "$h/libpod_parent" ] || made_cgroups+=("$h/libpod_parent")
done
remove_cgroups() {
  local c
  for c in "${made_cgroups[@]}"; do
    rmdir "$c/conmon" "$c" 2>/dev/null || true
  done
}
trap remove_cgroups EXIT

# ------------------------------------------------------------ the stage, as bootkube.sh runs it
record_service_stage_start() { echo "bootkube: stage $1 started"; }
record_service_stage_success() { echo "bootkube: stage succeeded"; }
cd "$assets"
# shellcheck disable=SC1091 # the generated stage
. bootkube/ccm-bootstrap.sh
