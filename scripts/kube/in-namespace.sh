#!/usr/bin/env bash
# Run a command of the test cluster with some paths replaced, in a mount namespace of its own:
# what the kubelet and containerd would otherwise write on the host (sysctls, /var/lib/kubelet,
# /var/log/containers, /run/containerd) lands in the stack's directory instead, and the host
# never sees those mounts. Started by scripts/kube-up.sh as
#
#   unshare --mount --propagation unchanged -- scripts/kube/in-namespace.sh \
#     [--bind SRC DST]... [--overlay DIR STATE]... [--bind-dir SRC DST]... -- CMD [ARG]...
#
# --bind mounts SRC over DST (a private copy of a /proc/sys file); --bind-dir makes the
# directory DST (inside an overlay given before it, so not on the host) and mounts the directory
# SRC over it (the stack's etc-kubernetes over /etc/kubernetes); --overlay mounts an overlay
# over DIR whose lower layer is DIR itself and whose upper layer is STATE/upper: the command
# sees the host's files and its writes go to STATE, and no mount point has to be made on the
# host. `--propagation unchanged` keeps the kubelet's root directory a shared mount, so the
# volumes the kubelet mounts there reach containerd's namespace and the containers. Refuses to
# mount anything unless it runs in a mount namespace other than the caller's ($KUBE_HOST_MNTNS,
# the `readlink /proc/self/ns/mnt` of kube-up.sh). The command keeps this PID (exec), so the
# caller's PID file names it.
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
  --bind-dir)
    [ $# -ge 3 ] || die "--bind-dir needs SRC DST"
    mkdir -p "$2" "$3" || die "mkdir $3 failed"
    mount --bind "$2" "$3" || die "mount --bind $2 $3 failed"
    shift 3
    ;;
  --overlay)
    [ $# -ge 3 ] || die "--overlay needs DIR STATE"
    mkdir -p "$3/upper" "$3/work"
    mount -t overlay overlay -o "lowerdir=$2,upperdir=$3/upper,workdir=$3/work" "$2" ||
      die "mount -t overlay on $2 failed"
    shift 3
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
