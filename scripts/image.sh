#!/usr/bin/env bash
# Builds the one container image of ccm-assets: both binaries (`ccm-assets` and
# `openstack-cloud-controller-manager`) from the release build, the glibc libraries they link,
# a CA bundle; no base image, no shell, user 65532, entrypoint the CCM. See: issue 18.
#
#   scripts/image.sh                    release build, then the OCI layout target/image/oci
#                                       (ref name v<workspace version>); prints the digest
#   scripts/image.sh --docker-archive   also target/image/ccm-assets-v<version>.tar (podman load)
#   scripts/image.sh --push REF         also push it (skopeo copy to docker://REF; log in first
#                                       with `skopeo login`)
#   scripts/image.sh --no-build ...     use the binaries already in target/release
#   scripts/image.sh --test             build once, assemble twice (same digest), then check the
#                                       image and run both binaries from its unpacked root
#   scripts/image.sh --test-openstack ENV_FILE
#                                       after --test: the CCM from the unpacked image initializes
#                                       a real server's node (needs scripts/openstack-up.sh's stack)
#   scripts/image.sh --run BIN [ARGS]   run BIN of the unpacked image (after --test) as 65532 on a
#                                       read-only root, with $TMPDIR (or /tmp) visible read-only
#
# Tools: umoci builds the layout and skopeo inspects, converts and pushes it, both from Debian
# (installed here when missing). umoci needs no daemon, no container storage, no registry and no
# privilege beyond writing files, writes an OCI layout directly, and lets every timestamp be
# set; buildah would need containers-storage (overlay or vfs) and a `from scratch` container,
# and podman a working runtime, neither of which this build needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

die() { printf 'image.sh: %s\n' "$*" >&2; exit 1; }
say() { printf '==> %s\n' "$*" >&2; }

# The image's fixed facts; the generated manifests assume them (src/assets/images.rs USER,
# src/assets/provider.rs Binary::OwnImage, templates/ccm-bootstrap.sh.hbs --entrypoint).
user=65532
entrypoint=/usr/bin/openstack-cloud-controller-manager
path_env=/usr/bin
budget=$((15 * 1024 * 1024)) # compressed bytes: layers + config + manifest

workspace_key() { sed -n "/^\[workspace.package\]/,/^\[/s/^$1 = \"\(.*\)\"$/\1/p" Cargo.toml; }
version=$(workspace_key version)
license=$(workspace_key license)
source_url=$(workspace_key repository)
tag="v$version"
image_name=$(jq -r '."ccm-assets"' data/images.json)
[ "${image_name##*:}" = "$tag" ] || die "data/images.json names $image_name, not tag $tag"
target=${CARGO_TARGET_DIR:-$PWD/target}
out="$target/image"
layout="$out/oci"
rootfs="$out/bundle/rootfs"

build=1 docker_archive="" push="" test="" openstack_env="" run=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=""; shift ;;
    --docker-archive) docker_archive=1; shift ;;
    --push) [ $# -ge 2 ] || die "--push needs a REF"; push="$2"; shift 2 ;;
    --test) test=1; shift ;;
    --test-openstack) [ $# -ge 2 ] || die "--test-openstack needs ENV_FILE"; openstack_env="$2"; shift 2 ;;
    --run) shift; run=("$@"); break ;;
    *) die "unknown argument: $1 (see the comment at the top of scripts/image.sh)" ;;
  esac
done

# Runs BIN of the unpacked image: a private mount namespace, the root bind-mounted read-only,
# $work (when set) writable at /work, $TMPDIR read-only at its own path; then chroot as $user.
# The process keeps this PID (unshare and chroot exec), so killing it kills the binary.
in_image() {
  [ -d "$rootfs" ] || die "no unpacked image at $rootfs: run scripts/image.sh --test first"
  local tmp=${TMPDIR:-/tmp}
  # shellcheck disable=SC2016 # the inner script's own variables
  exec unshare --mount -- sh -c '
    root=$1 work=$2 tmp=$3 user=$4; shift 4
    mount --bind "$root" "$root" && mount -o remount,bind,ro "$root"
    if [ -n "$work" ]; then mount --bind "$work" "$root/work"; fi
    mount --bind "$tmp" "$root$tmp" && mount -o remount,bind,ro "$root$tmp"
    exec chroot --userspec="$user:$user" "$root" "$@"' \
    sh "$rootfs" "${work:-}" "$tmp" "$user" "$@"
}
if [ ${#run[@]} -gt 0 ]; then
  in_image "${run[@]}"
fi

if [ -n "$openstack_env" ]; then
  # The end-to-end tests that start the CCM from the generated bootstrap manifests against the
  # real Keystone/Nova (plain, and over the stack's HTTPS front with the generated CA) and a
  # wire-level fake API server, with the image's binary instead of cargo's
  # (controller/tests/it/support.rs reads CCM_TEST_OCCM_BIN).
  [ -x "$out/bin/openstack-cloud-controller-manager" ] || die "run scripts/image.sh --test first"
  say "the CCM from the image against the real OpenStack of $openstack_env"
  CCM_OPENSTACK_ENV=$openstack_env CCM_TEST_OCCM_BIN="$out/bin/openstack-cloud-controller-manager" \
    cargo nextest run --locked -p openstack-cloud-controller-manager --run-ignored only \
    -E 'test(/^end_to_end::generated_bootstrap_manifests_/)'
  exit 0
fi

for tool in umoci skopeo jq; do
  if ! command -v "$tool" >/dev/null; then
    [ "$(id -u)" = 0 ] || die "$tool is missing: apt-get install umoci skopeo jq (as root)"
    say "installing umoci skopeo jq (apt)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq umoci skopeo jq >/dev/null
    break
  fi
done

# Everything the image's bytes depend on comes from the commit: its time, its revision.
epoch=$(git log -1 --format=%ct)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD)
if ! git diff --quiet HEAD -- 2>/dev/null; then revision="$revision-dirty"; fi
export SOURCE_DATE_EPOCH=$epoch

if [ -n "$build" ]; then
  say "cargo build --release (both binaries)"
  # No build path inside the binaries: the checkout, the target dir and cargo's registry are
  # renamed in panic locations and the like (the target dir after the checkout that may hold
  # it: the last matching prefix wins).
  cargo_home=${CARGO_HOME:-$HOME/.cargo}
  RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }--remap-path-prefix=$PWD=/ccm-assets --remap-path-prefix=$target=/target --remap-path-prefix=$cargo_home=/cargo" \
    cargo build --release --locked -p ccm-assets -p openstack-cloud-controller-manager --bins
fi
bins=("$target/release/ccm-assets" "$target/release/openstack-cloud-controller-manager")
for bin in "${bins[@]}"; do [ -x "$bin" ] || die "no $bin: build without --no-build first"; done

# The root filesystem, built afresh in $1 (an unpacked umoci bundle's rootfs): the binaries,
# the libraries `ldd` lists at the paths it lists them (the loader at the binaries' PT_INTERP),
# the CA bundle, and the licences of what we ship from Debian. Modes, owners and times fixed.
fill_rootfs() {
  local root=$1 lib
  install -D -m 0755 "${bins[@]}" -t "$root/usr/bin"
  for lib in $(ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u); do
    install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  for pkg in libc6 libgcc-s1 ca-certificates; do
    install -D -m 0644 "/usr/share/doc/$pkg/copyright" "$root/usr/share/doc/$pkg/copyright"
  done
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -exec touch -h -d "@$epoch" {} +
}

# One image in a fresh OCI layout at $1; prints its manifest digest.
assemble() {
  local dest=$1 bundle="$out/bundle.build" rootless=()
  [ "$(id -u)" = 0 ] || rootless=(--rootless)
  rm -rf "$dest" "$bundle"
  umoci init --layout "$dest"
  umoci new --image "$dest:$tag"
  umoci unpack "${rootless[@]}" --image "$dest:$tag" "$bundle" >/dev/null
  fill_rootfs "$bundle/rootfs"
  umoci repack "${rootless[@]}" --image "$dest:$tag" --history.created "$created" \
    --history.created_by "scripts/image.sh (ccm-assets $version)" "$bundle"
  umoci config --image "$dest:$tag" --created "$created" --history.created "$created" \
    --author "" --os linux --architecture amd64 \
    --config.user "$user:$user" --config.entrypoint "$entrypoint" --config.env "PATH=$path_env" \
    --config.workingdir / \
    --config.label "org.opencontainers.image.title=ccm-assets" \
    --config.label "org.opencontainers.image.source=$source_url" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.revision=$revision" \
    --config.label "org.opencontainers.image.licenses=$license" \
    --config.label "org.opencontainers.image.created=$created"
  umoci gc --layout "$dest"
  rm -rf "$bundle"
  jq -r '.manifests[0].digest' "$dest/index.json"
}

mkdir -p "$out"
say "assembling $image_name in $layout"
digest=$(assemble "$layout")
printf '%s\n' "$digest" >"$out/digest"
if [ -n "$test" ]; then
  # Same binaries, same commit: the same bytes. (A rebuild of the binaries too: README,
  # "Container image".)
  again=$(assemble "$out/oci.again")
  rm -rf "$out/oci.again"
  [ "$again" = "$digest" ] || die "not reproducible: $digest, then $again"
  say "assembled twice: the same digest"
fi
printf '%s@%s\n' "$image_name" "$digest"

if [ -n "$docker_archive" ]; then
  archive="$out/ccm-assets-$tag.tar"
  rm -f "$archive"
  skopeo copy --quiet "oci:$layout:$tag" "docker-archive:$archive:$image_name"
  say "docker-archive: $archive (podman load -i $archive)"
fi
if [ -n "$push" ]; then
  skopeo copy "oci:$layout:$tag" "docker://$push"
fi
[ -n "$test" ] || exit 0

# ---- checks of the built image ----
fail() { die "image check failed: $*"; }

say "config: entrypoint, user, environment, labels"
config=$(skopeo inspect --config "oci:$layout:$tag")
check() { # check JQ_FILTER EXPECTED
  local got; got=$(jq -c "$1" <<<"$config")
  [ "$got" = "$2" ] || fail "$1 is $got, want $2"
}
check .config.Entrypoint "[\"$entrypoint\"]"
check .config.Cmd null
check .config.User "\"$user:$user\""
check .config.Env "[\"PATH=$path_env\"]"
check '.config.Labels["org.opencontainers.image.source"]' "\"$source_url\""
check '.config.Labels["org.opencontainers.image.version"]' "\"$version\""
check '.config.Labels["org.opencontainers.image.revision"]' "\"$revision\""
check '.config.Labels["org.opencontainers.image.licenses"]' "\"$license\""
check .created "\"$created\""

say "layers: exactly the expected files"
manifest=$(skopeo inspect --raw "oci:$layout:$tag")
files=$(for layer in $(jq -r '.layers[].digest' <<<"$manifest"); do
  tar -tzf "$layout/blobs/sha256/${layer#sha256:}"
done | sed 's|^\./||; /^\.\?$/d' | sort)
expected="etc/
etc/ssl/
etc/ssl/certs/
etc/ssl/certs/ca-certificates.crt
lib/
lib/x86_64-linux-gnu/
lib/x86_64-linux-gnu/libc.so.6
lib/x86_64-linux-gnu/libgcc_s.so.1
lib/x86_64-linux-gnu/libm.so.6
lib64/
lib64/ld-linux-x86-64.so.2
usr/
usr/bin/
usr/bin/ccm-assets
usr/bin/openstack-cloud-controller-manager
usr/share/
usr/share/doc/
usr/share/doc/ca-certificates/
usr/share/doc/ca-certificates/copyright
usr/share/doc/libc6/
usr/share/doc/libc6/copyright
usr/share/doc/libgcc-s1/
usr/share/doc/libgcc-s1/copyright"
if [ "$files" != "$expected" ]; then
  diff <(printf '%s\n' "$expected") <(printf '%s\n' "$files") >&2 || true
  fail "the layers hold other files than expected (diff above: < expected, > found)"
fi
if grep -Eq '(^|/)(sh|bash|busybox|dash|apt|apt-get|dpkg|rpm|microdnf|apk)$' <<<"$files"; then
  fail "a shell or a package manager is in the image"
fi

say "size: compressed image under $((budget / 1024 / 1024)) MiB"
size=$(jq '[.config.size, (.layers[].size)] | add' <<<"$manifest")
size=$((size + ${#manifest}))
[ "$size" -lt "$budget" ] || fail "compressed size $size bytes is over the budget of $budget"
printf 'compressed size: %s bytes (%s MiB); binaries: %s\n' "$size" \
  "$(awk "BEGIN {printf \"%.2f\", $size / 1048576}")" \
  "$(stat -c '%n %s' "${bins[@]}" | sed "s|$target/release/||" | paste -sd ',' | sed 's/,/, /')" >&2

say "no build path inside the binaries"
for leak in "$PWD" "$target" "${CARGO_HOME:-$HOME/.cargo}"; do
  for bin in "${bins[@]}"; do
    if grep -qF "$leak/" "$bin"; then fail "$bin contains the path $leak"; fi
  done
done

say "unpack, and run both binaries from the unpacked root (chroot as $user, read-only root)"
rm -rf "$out/bundle"
umoci unpack --image "$layout:$tag" "$out/bundle" >/dev/null
# Mount points for what in_image binds (the runtime makes them in a real container).
mkdir -p "$rootfs/work" "$rootfs${TMPDIR:-/tmp}"
work=$(mktemp -d "$out/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
chown "$user:$user" "$work"
run() ( in_image "$@" )
# The wrapper the end-to-end test starts instead of cargo's binary (--test-openstack).
mkdir -p "$out/bin"
printf '#!/bin/sh\nexec %q --run /usr/bin/openstack-cloud-controller-manager "$@"\n' \
  "$PWD/scripts/image.sh" >"$out/bin/openstack-cloud-controller-manager"
chmod 0755 "$out/bin/openstack-cloud-controller-manager"

got=$(run /usr/bin/ccm-assets --version)
[ "$got" = "ccm-assets $version" ] || fail "ccm-assets --version: $got"
got=$(run /usr/bin/openstack-cloud-controller-manager --version)
[ "$got" = "openstack-cloud-controller-manager $version" ] || fail "occm --version: $got"
# Operator mode is in the same binary (issue 39): its command line parses in the image.
run /usr/bin/ccm-assets operator --help >"$work/operator-help.log" 2>&1 \
  || { cat "$work/operator-help.log" >&2; fail "ccm-assets operator --help in the image"; }
grep -q "ccm-assets operator remove" "$work/operator-help.log" \
  || fail "ccm-assets operator --help in the image does not teach remove"

cp -r assets/examples/openstack "$work/openstack"
chown -R "$user:$user" "$work/openstack"
OS_CLIENT_CONFIG_FILE=/work/openstack/clouds.yaml \
  run /usr/bin/ccm-assets create manifests --dir /work/openstack --offline \
  --infra-id image-test 2>"$work/create.log" \
  || { cat "$work/create.log" >&2; fail "ccm-assets create manifests in the image"; }
[ -s "$work/openstack/bootstrap/configs/cloud.conf" ] || fail "no bootstrap cloud.conf written"
run /usr/bin/openstack-cloud-controller-manager --check-config \
  --cloud-config=/work/openstack/bootstrap/configs/cloud.conf >"$work/check.log" 2>&1 \
  || { cat "$work/check.log" >&2; fail "--check-config in the image"; }

say "the generated manifests run what the image holds"
python3 - "$work/openstack" "$rootfs" "$image_name" "$user" "$config" <<'EOF'
import glob, json, os, re, sys
import yaml

out, rootfs, image, user, config = sys.argv[1:6]
config = json.loads(config)["config"]
path = [e.split("=", 1)[1] for e in config["Env"] if e.startswith("PATH=")][0].split(":")
user = int(user)
errors = []

def resolve(name):
    """Where the runtime finds `name` in the image: as is when absolute, else on its PATH."""
    dirs = [""] if name.startswith("/") else path
    for d in dirs:
        p = os.path.join(rootfs + d, name.lstrip("/")) if d else rootfs + name
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None

containers = 0
for f in sorted(glob.glob(out + "/**/*.yaml", recursive=True)):
    for doc in yaml.safe_load_all(open(f)):
        if not isinstance(doc, dict) or doc.get("kind") not in ("Pod", "Deployment", "DaemonSet"):
            continue
        spec = doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]
        for c in spec.get("initContainers", []) + spec["containers"]:
            where = f"{os.path.relpath(f, out)}: {c['name']}"
            if c["image"] != image:
                errors.append(f"{where}: image {c['image']}, not {image}")
                continue
            containers += 1
            argv = c.get("command") or config["Entrypoint"]
            if resolve(argv[0]) is None:
                errors.append(f"{where}: {argv[0]} is not an executable in the image")
            sc = c.get("securityContext", {})
            if sc.get("runAsUser") != user or sc.get("readOnlyRootFilesystem") is not True:
                errors.append(f"{where}: securityContext {sc} is not user {user}, read-only root")
stage = open(out + "/bootkube/ccm-bootstrap.sh").read()
m = re.search(r"--entrypoint=(\S+)", stage)
if not m or resolve(m.group(1)) is None:
    errors.append(f"bootkube/ccm-bootstrap.sh: entrypoint {m and m.group(1)} is not in the image")
if f'"{image}"' not in stage:
    errors.append(f"bootkube/ccm-bootstrap.sh does not run {image}")
if containers < 2:
    errors.append(f"only {containers} containers run the image (want the static pod and the Deployment)")
for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
say "image checks passed: $image_name@$digest"
