#!/usr/bin/env bash
# Run a command of the test cluster with some paths replaced, in a mount namespace of its own:
# what the kubelet and containerd would otherwise write on the host (sysctls, /var/lib/kubelet,
# /var/log/containers, /run/containerd) lands in the stack's directory instead, and the host
# never sees those mounts. Started by scripts/kube-up.sh as
#
#   unshare --mount --propagation unchanged -- scripts/kube/in-namespace.sh \
#     [--bind SRC DST]... [--tmpfs DST]... -- CMD [ARG]...
#
# `--propagation unchanged` keeps the kubelet's root directory a shared mount, so the volumes
# the kubelet mounts there reach containerd's namespace and the containers. Refuses to mount
# anything unless it runs in a mount namespace other than the caller's ($KUBE_HOST_MNTNS, the
# `readlink /proc/self/ns/mnt` of kube-up.sh). The command keeps this PID
# (exec), so the caller's PID file names it.
set -euo pipefail

die() {
  printf 'in-namespace.sh: %s\n' "$*" >&2
  exit 1
}

[ -n "${KUBE_HOST_MNTNS:-}" ] || die "KUBE_HOST_MNTNS is not set; nothing mounted"
[ "$(readlink /proc/self/ns/mnt)" != "$KUBE_HOST_MNTNS" ] ||
  die "not in a mount namespace of its own (run it under unshare --mount); nothing mounted"

while [ $# -gt 0 ]; do
  case $1 in
  --bind)
    [ $# -ge 3 ] || die "--bind needs SRC DST"
    mount --bind "$2" "$3" || die "mount --bind $2 $3 failed"
    shift 3
    ;;
  --tmpfs)
    [ $# -ge 2 ] || die "--tmpfs needs DST"
    mount -t tmpfs -o mode=0711 tmpfs "$2" || die "mount -t tmpfs on $2 failed"
    shift 2
    ;;
  --)
    shift
    break
    ;;
  *) die "unknown argument '$1'" ;;
  esac
done
[ $# -gt 0 ] || die "no command after --"
exec "$@"
