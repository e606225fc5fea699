#!/usr/bin/env bash
# Build the Kubernetes binaries the test cluster runs (issue 25), once per release and machine:
# kube-apiserver, kube-controller-manager, kubelet and kubectl from the k8s.io/kubernetes Go
# module pinned in scripts/kube/go.mod (its staging modules `replace`d by their published
# v0.<minor>.<patch>), and the cluster's pause binary (scripts/kube/pause). Tags `providerless`
# (no in-tree cloud providers), `-s -w`, CGO off, the version stamped in as the release's own
# build would (`kubectl version`, the node's kubeletVersion and /version say it).
#
#   scripts/kube/build.sh            build unless the binaries of these inputs exist; print the
#                                    directory that holds them (the last stdout line)
#   scripts/kube/build.sh --force    build again (go's cache makes it a relink)
#
# Everything lives outside the clone, in $KUBE_CACHE_DIR/<version>/ (default
# /var/cache/ccm-assets/kube as root, else $XDG_CACHE_HOME or ~/.cache/ccm-assets/kube):
# gomodcache/ (the module download), gocache/ (go's build cache), bin/ (the binaries and a stamp
# of the inputs they were built from). A second build of the same inputs does nothing.
set -euo pipefail
# shellcheck source=scripts/kube/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# shellcheck source=scripts/lib/build.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/build.sh"
build_args "$@"

command -v go >/dev/null || die "no go on PATH (Go >= 1.26 is needed to build $KUBE_VERSION)"
cache=$KUBE_CACHE_DIR/$KUBE_VERSION
mkdir -p "$KUBE_BIN"
# Two builds of the same release at once (two clones, a developer and CI) take turns.
exec 9>"$cache/build.lock"
flock 9

export GOMODCACHE=$cache/gomodcache GOCACHE=$cache/gocache GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=amd64
BINARIES=(kube-apiserver kube-controller-manager kubelet kubectl pause)

# What the binaries depend on: the module files, the pause source, this script (flags), go.
stamp=$(cat "$KUBE_SCRIPTS/go.mod" "$KUBE_SCRIPTS/go.sum" "$KUBE_SCRIPTS/pause/main.go" \
  "${BASH_SOURCE[0]}" <(go version) | sha256sum | cut -d' ' -f1)
built() {
  local b
  [ "$(cat "$KUBE_BIN/.stamp" 2>/dev/null)" = "$stamp" ] || return 1
  for b in "${BINARIES[@]}"; do [ -x "$KUBE_BIN/$b" ] || return 1; done
}
if [ -z "$force" ] && built; then
  echo "$KUBE_BIN"
  exit 0
fi

# The version variables that Kubernetes' own build (hack/lib/version.sh) sets.
minor=${KUBE_VERSION#v*.}
minor=${minor%%.*}
major=${KUBE_VERSION#v}
major=${major%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

log "building Kubernetes $KUBE_VERSION (${BINARIES[*]}) into $KUBE_BIN; a first build" \
  "downloads ~0.8 GB of modules and takes 10-30 min on 2 cores, later ones take seconds"
rm -f "$KUBE_BIN/.stamp"
t=$(date +%s)
(
  cd "$KUBE_SCRIPTS"
  go mod download
  nice go build -trimpath -tags providerless -ldflags="$ldflags" -o "$KUBE_BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl ./pause
) >"$cache/build.log" 2>&1 || {
  tail -n 40 "$cache/build.log" >&2
  die "building Kubernetes $KUBE_VERSION failed (full log: $cache/build.log)"
}
echo "$stamp" >"$KUBE_BIN/.stamp"
secs=$(($(date +%s) - t))
echo "$(date -u +%FT%TZ) build=${secs}s" >>"$cache/timings"
log "built in ${secs}s; $(du -sh "$cache" | cut -f1) in $cache"
echo "$KUBE_BIN"
