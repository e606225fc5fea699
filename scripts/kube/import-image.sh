#!/usr/bin/env bash
# Import an image from an OCI layout directory into the test cluster's containerd, where its
# kubelet runs it (no registry is reachable; pods use `imagePullPolicy: Never` or
# `IfNotPresent`). The manifest is kept as it is, so NAME@DIGEST works too.
#
#   scripts/kube/import-image.sh ENV_FILE LAYOUT:TAG NAME
#
# ENV_FILE is the one scripts/kube-up.sh printed (KUBE_CONTAINERD_ADDRESS and
# KUBE_CONTAINERD_NAMESPACE are read from it). For the project's image (scripts/image.sh):
#
#   scripts/kube/import-image.sh target/kube/env target/image/oci:v0.1.0 \
#     "$(jq -r '."ccm-assets"' data/images.json)"
#
# which is, in ctr's own terms, an OCI archive of that one tag whose index names it NAME:
#   ctr --address $KUBE_CONTAINERD_ADDRESS -n k8s.io images import ARCHIVE.tar
set -euo pipefail
# shellcheck source=scripts/kube/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

script_help "$@"
[ $# -eq 3 ] || die "usage: scripts/kube/import-image.sh ENV_FILE LAYOUT:TAG NAME"
env_file=$1 source=$2 name=$3
use_env_file "$env_file"
CONTAINERD_SOCK=$(env_value KUBE_CONTAINERD_ADDRESS)
CONTAINERD_NS=$(env_value KUBE_CONTAINERD_NAMESPACE)
if [ -z "$CONTAINERD_SOCK" ] || [ -z "$CONTAINERD_NS" ]; then
  die "$env_file has no KUBE_CONTAINERD_ADDRESS or KUBE_CONTAINERD_NAMESPACE"
fi
case $source in
*:*) layout=${source%:*} tag=${source##*:} ;;
*) die "give the image as LAYOUT:TAG (e.g. target/image/oci:v0.1.0), not '$source'" ;;
esac
import_image "$layout" "$tag" "$name" >/dev/null
echo "imported $layout:$tag as $name into $CONTAINERD_SOCK (namespace $CONTAINERD_NS)" >&2
