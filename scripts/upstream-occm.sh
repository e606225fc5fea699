#!/usr/bin/env bash
# Build upstream's openstack-cloud-controller-manager (k8s.io/cloud-provider-openstack, the
# release pinned below) once per machine, for the tests that hand a Service back to it
# (controller/tests/it/real_kube_hand_back.rs, issue 36 item 3b). The release's own module is built as
# its own main module, with its own go.mod and go.sum (its `replace` lines are why `go install
# …@version` refuses it), with the flags of its Makefile's build target: `-w -s`, CGO off, the
# version stamped in.
#
#   scripts/upstream-occm.sh           build unless the binary of these inputs exists; print its
#                                      path (the last stdout line)
#   scripts/upstream-occm.sh --force   build again (go's cache makes it a relink)
#
# Everything lives outside the clone, in $OCCM_CACHE_DIR/<version>/ (default
# /var/cache/ccm-assets/upstream-occm as root, else $XDG_CACHE_HOME or
# ~/.cache/ccm-assets/upstream-occm): gomodcache/, gocache/, src/ (a writable copy of the module)
# and bin/ (the binary and a stamp of its inputs). A second build of the same inputs does
# nothing. The build runs under `nice` with one package at a time (`go build -p 1`).
set -euo pipefail

OCCM_VERSION=v1.36.0
MODULE=k8s.io/cloud-provider-openstack

STACK=upstream-occm
# shellcheck source=scripts/lib/services.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/services.sh" # log, die
# shellcheck source=scripts/lib/build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

build_args "$@"

if [ -z "${OCCM_CACHE_DIR:-}" ]; then
  if [ -n "${XDG_CACHE_HOME:-}" ]; then
    OCCM_CACHE_DIR=$XDG_CACHE_HOME/ccm-assets/upstream-occm
  elif [ "$(id -u)" = 0 ]; then
    OCCM_CACHE_DIR=/var/cache/ccm-assets/upstream-occm
  else
    OCCM_CACHE_DIR=$HOME/.cache/ccm-assets/upstream-occm
  fi
fi
command -v go >/dev/null || die "no go on PATH (Go >= 1.26 is needed to build $OCCM_VERSION)"
cache=$OCCM_CACHE_DIR/$OCCM_VERSION
bin=$cache/bin/openstack-cloud-controller-manager
mkdir -p "$cache/bin"
# Two builds at once (two clones, a developer and CI) take turns.
exec 9>"$cache/build.lock"
flock 9

export GOMODCACHE=$cache/gomodcache GOCACHE=$cache/gocache GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=amd64

# What the binary depends on: the release (its go.sum is part of it), this script (flags), go.
stamp=$(printf '%s@%s\n' "$MODULE" "$OCCM_VERSION" | cat - "${BASH_SOURCE[0]}" <(go version) |
  sha256sum | cut -d' ' -f1)
if [ -z "$force" ] && [ -x "$bin" ] && [ "$(cat "$cache/bin/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$bin"
  exit 0
fi

log "building $MODULE $OCCM_VERSION (openstack-cloud-controller-manager) into $cache/bin; a" \
  "first build downloads ~0.5 GB of modules and takes 10-30 min on 2 cores, later ones seconds"
rm -f "$cache/bin/.stamp"
t=$(date +%s)
ldflags="-w -s -X k8s.io/component-base/version.gitVersion=$OCCM_VERSION"
ldflags+=" -X $MODULE/pkg/version.Version=$OCCM_VERSION"
(
  # The module as the proxy serves it (checked against sum.golang.org), copied out of the
  # read-only module cache so that it can be the main module.
  dir=$(go mod download -json "$MODULE@$OCCM_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "go mod download $MODULE@$OCCM_VERSION gave no directory"
  rm -rf "$cache/src"
  cp -r "$dir" "$cache/src"
  chmod -R u+w "$cache/src"
  cd "$cache/src"
  go mod download
  nice go build -p 1 -trimpath -ldflags="$ldflags" -o "$bin" ./cmd/openstack-cloud-controller-manager
) >"$cache/build.log" 2>&1 || {
  tail -n 40 "$cache/build.log" >&2
  die "building $MODULE $OCCM_VERSION failed (full log: $cache/build.log)"
}
"$bin" --version >>"$cache/build.log" 2>&1 || die "the built $bin does not run (see $cache/build.log)"
echo "$stamp" >"$cache/bin/.stamp"
secs=$(($(date +%s) - t))
echo "$(date -u +%FT%TZ) build=${secs}s" >>"$cache/timings"
log "built in ${secs}s; $(du -sh "$cache" | cut -f1) in $cache"
echo "$bin"
