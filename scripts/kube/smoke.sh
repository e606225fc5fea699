#!/usr/bin/env bash
# Smoke test of the cluster that scripts/kube-up.sh started: it proves what the tests rely on.
#
#   scripts/kube/smoke.sh [ENV_FILE]     (default: $CCM_KUBE_ENV, else target/kube/env)
#
# API server: /readyz, /version is the pinned release. RBAC, for real: a client certificate
# signed by KUBE_CLIENT_CA (CN ccm-smoke-user, no group) is authenticated and gets 403 on
# GET /api/v1/nodes, then 200 once a ClusterRole and ClusterRoleBinding allow it. Node: Ready,
# kubeletVersion the release. Static pod: a manifest dropped into KUBE_STATIC_POD_DIR runs and
# its mirror pod is Running; removed, the mirror pod goes. Imported image: the pause layout
# imported under a new name with scripts/kube/import-image.sh runs as a pod bound by nodeName,
# its projected ServiceAccount token arrives in the container (read through /proc/PID/root) and
# authenticates as the pod's ServiceAccount; `kubectl logs` reaches the kubelet. TokenRequest: a
# token for a new ServiceAccount authenticates as it (SelfSubjectReview) and is refused (403)
# what RBAC does not grant. With scripts/image.sh's layout present (target/image/oci), the
# project's image also runs as a pod (`--version`, Succeeded, its output through kubectl logs);
# the layout is looked for where scripts/image.sh writes it (${CARGO_TARGET_DIR:-target}/image).
# The pods, ServiceAccounts and RBAC objects it creates are deleted again (imported images stay);
# any failure exits 1 with the tails of the logs.
set -euo pipefail
# shellcheck source=scripts/kube/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

case ${1:-} in -h | --help)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
  ;;
esac
env_file=${1:-${CCM_KUBE_ENV:-$REPO/target/kube/env}}
[ -s "$env_file" ] || die "no env file $env_file (scripts/kube-up.sh prints its path)"
env_value() {
  local v
  v=$(sed -n "s/^$1=//p" "$env_file" | tail -n 1)
  [ -n "$v" ] || die "$env_file has no $1"
  echo "$v"
}
API=$(env_value KUBE_API_URL)
KC=$(env_value KUBE_ADMIN_KUBECONFIG)
SERVER_CA=$(env_value KUBE_SERVER_CA_CERT)
CLIENT_CA=$(env_value KUBE_CLIENT_CA_CERT)
CLIENT_CA_KEY=$(env_value KUBE_CLIENT_CA_KEY)
KUBECTL=$(env_value KUBECTL)
NODE=$(env_value KUBE_NODE_NAME)
STATIC=$(env_value KUBE_STATIC_POD_DIR)
VERSION=$(env_value KUBE_VERSION)
PAUSE_LAYOUT=$(env_value KUBE_PAUSE_LAYOUT)
PAUSE_IMAGE=$(env_value KUBE_PAUSE_IMAGE)
KUBE_DIR=$(env_value KUBE_DIR)
LOG=$KUBE_DIR/log
CONTAINERD_SOCK=$(env_value KUBE_CONTAINERD_ADDRESS)
CONTAINERD_NS=$(env_value KUBE_CONTAINERD_NAMESPACE)
SMOKE_IMAGE=localhost/ccm-assets/kube-smoke:1
WAIT=${KUBE_SMOKE_TIMEOUT:-90}

t0=$(date +%s)
checks=0
ok() {
  checks=$((checks + 1))
  printf '[smoke +%3ss] ok: %s\n' "$(($(date +%s) - t0))" "$*" >&2
}
work=$(mktemp -d "${TMPDIR:-/tmp}/kube-smoke.XXXXXX")
k() { "$KUBECTL" --kubeconfig "$KC" "$@"; }
cleanup() {
  local rc=$?
  rm -f "$STATIC/ccm-smoke-static.yaml" "$STATIC/.ccm-smoke-static.yaml"
  k delete pod -n default ccm-smoke-image ccm-smoke-ccm --ignore-not-found --wait=false \
    >/dev/null 2>&1 || true
  k delete serviceaccount -n default ccm-smoke ccm-smoke-pod --ignore-not-found >/dev/null 2>&1 || true
  k delete clusterrolebinding ccm-smoke-nodes --ignore-not-found >/dev/null 2>&1 || true
  k delete clusterrole ccm-smoke-nodes --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$work"
  if [ $rc -ne 0 ]; then
    for f in kube-apiserver kubelet containerd; do log_tail "$f"; done
    printf 'kube smoke: FAILED after %s checks\n' "$checks" >&2
  fi
}
trap cleanup EXIT
fail() { die "smoke: $*"; }

# until_ok SECONDS DESCRIPTION COMMAND...: retry COMMAND for up to SECONDS.
until_ok() {
  local deadline=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${WAIT}s: $what"
    sleep 0.5
  done
}

# --------------------------------------------------------------------------------- API server
as_admin() { curl -fsS --max-time 10 --cacert "$SERVER_CA" --cert "$KUBE_DIR/pki/admin.crt" \
  --key "$KUBE_DIR/pki/admin.key" "$@"; }
[ "$(as_admin "$API/readyz")" = ok ] || fail "/readyz is not ok"
got=$(as_admin "$API/version" | jq -r .gitVersion)
[ "$got" = "$VERSION" ] || fail "/version says $got, not $VERSION"
ok "kube-apiserver $VERSION ready on $API"

# -------------------------------------------------------------------------------- RBAC, real
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=ccm-smoke-user \
  -keyout "$work/user.key" -out "$work/user.csr" 2>/dev/null
printf '%s\n' basicConstraints=critical,CA:FALSE extendedKeyUsage=clientAuth >"$work/user.ext"
openssl x509 -req -in "$work/user.csr" -CA "$CLIENT_CA" -CAkey "$CLIENT_CA_KEY" -CAcreateserial \
  -CAserial "$work/ca.srl" -days 1 -extfile "$work/user.ext" -out "$work/user.crt" 2>/dev/null
as_user() {
  curl -sS -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$SERVER_CA" \
    --cert "$work/user.crt" --key "$work/user.key" "$@"
}
code=$(as_user "$API/api/v1/nodes")
[ "$code" = 403 ] || fail "a client certificate without RBAC got $code on GET /api/v1/nodes, not 403"
ok "a client certificate signed by KUBE_CLIENT_CA, no RBAC: 403 on GET /api/v1/nodes"
k create clusterrole ccm-smoke-nodes --verb=get,list --resource=nodes >/dev/null
k create clusterrolebinding ccm-smoke-nodes --clusterrole=ccm-smoke-nodes --user=ccm-smoke-user \
  >/dev/null
user_allowed() { [ "$(as_user "$API/api/v1/nodes")" = 200 ]; }
until_ok "$WAIT" "GET /api/v1/nodes allowed by the ClusterRoleBinding" user_allowed
code=$(as_user -X DELETE "$API/api/v1/nodes/$NODE")
[ "$code" = 403 ] || fail "the binding grants get and list only, yet DELETE got $code"
ok "with a ClusterRole and ClusterRoleBinding: 200 on GET, still 403 on DELETE"

# ---------------------------------------------------------------------------------------- node
ready=$(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
[ "$ready" = True ] || fail "node $NODE is not Ready ($ready)"
kv=$(k get node "$NODE" -o jsonpath='{.status.nodeInfo.kubeletVersion}')
[ "$kv" = "$VERSION" ] || fail "node $NODE runs kubelet $kv, not $VERSION"
ok "node $NODE Ready, kubelet $kv"

# ---------------------------------------------------------------------------------- static pod
# Written as a hidden file (the kubelet skips those), then renamed: it never sees half a file.
cat >"$STATIC/.ccm-smoke-static.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: ccm-smoke-static
  namespace: kube-system
spec:
  hostNetwork: true
  containers:
  - name: pause
    image: $PAUSE_IMAGE
    imagePullPolicy: Never
EOF
mv "$STATIC/.ccm-smoke-static.yaml" "$STATIC/ccm-smoke-static.yaml"
mirror=ccm-smoke-static-$NODE
mirror_running() {
  [ "$(k get pod -n kube-system "$mirror" -o jsonpath='{.status.phase}')" = Running ]
}
until_ok "$WAIT" "the static pod's mirror pod $mirror Running" mirror_running
ok "static pod from KUBE_STATIC_POD_DIR: mirror pod kube-system/$mirror Running"
rm -f "$STATIC/ccm-smoke-static.yaml"
mirror_gone() { ! k get pod -n kube-system "$mirror" >/dev/null 2>&1; }
until_ok "$WAIT" "the mirror pod $mirror gone after its manifest was removed" mirror_gone
ok "manifest removed: the mirror pod is gone"

# ---------------------------------------------------------------------- imported image, a pod
"$KUBE_SCRIPTS/import-image.sh" "$env_file" "$PAUSE_LAYOUT:${PAUSE_IMAGE##*:}" "$SMOKE_IMAGE" \
  2>/dev/null
images=$(ctr_k8s images ls -q) # (not piped into grep -q: under pipefail, ctr's SIGPIPE fails it)
grep -qx "$SMOKE_IMAGE" <<<"$images" || fail "$SMOKE_IMAGE is not in containerd"
ok "OCI layout imported with scripts/kube/import-image.sh as $SMOKE_IMAGE"
k create serviceaccount -n default ccm-smoke-pod >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: ccm-smoke-image
  namespace: default
spec:
  nodeName: $NODE
  hostNetwork: true
  serviceAccountName: ccm-smoke-pod
  containers:
  - name: main
    image: $SMOKE_IMAGE
    imagePullPolicy: Never
EOF
pod_running() {
  [ "$(k get pod -n default ccm-smoke-image -o jsonpath='{.status.phase}')" = Running ]
}
until_ok "$WAIT" "pod default/ccm-smoke-image Running" pod_running
ok "pod from the imported image Running (bound by nodeName, no scheduler)"
# The container's token, read in the container's own mount namespace.
cid=$(k get pod -n default ccm-smoke-image -o jsonpath='{.status.containerStatuses[0].containerID}')
pid=$(ctr_k8s tasks ls | awk -v id="${cid#containerd://}" '$1 == id { print $2 }')
[ -n "$pid" ] || fail "no containerd task for container $cid"
token_file=/proc/$pid/root/var/run/secrets/kubernetes.io/serviceaccount/token
[ -s "$token_file" ] || fail "the projected ServiceAccount token is not in the container ($token_file)"
whoami() {
  curl -fsS --max-time 10 --cacert "$SERVER_CA" -H "Authorization: Bearer $1" \
    -H 'Content-Type: application/json' -X POST \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
    "$API/apis/authentication.k8s.io/v1/selfsubjectreviews" | jq -r .status.userInfo.username
}
got=$(whoami "$(cat "$token_file")")
[ "$got" = system:serviceaccount:default:ccm-smoke-pod ] ||
  fail "the pod's projected token authenticates as '$got'"
ok "the pod's projected ServiceAccount token is in the container and authenticates as $got"
k logs -n default ccm-smoke-image >/dev/null || fail "kubectl logs (API server to kubelet) failed"
ok "kubectl logs reaches the kubelet"

# --------------------------------------------------------------------------------- TokenRequest
k create serviceaccount -n default ccm-smoke >/dev/null
token=$(k create token -n default ccm-smoke --duration=10m)
got=$(whoami "$token")
[ "$got" = system:serviceaccount:default:ccm-smoke ] ||
  fail "a TokenRequest token authenticates as '$got'"
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$SERVER_CA" \
  -H "Authorization: Bearer $token" "$API/api/v1/namespaces/kube-system/secrets")
[ "$code" = 403 ] || fail "the ServiceAccount with no RBAC got $code on kube-system secrets"
ok "a TokenRequest token authenticates as $got, and RBAC refuses it secrets (403)"

# ------------------------------------------------------------------ the project's image, if built
layout=${CARGO_TARGET_DIR:-$REPO/target}/image/oci
if [ -f "$layout/index.json" ]; then
  name=$(jq -r '."ccm-assets"' "$REPO/data/images.json")
  "$KUBE_SCRIPTS/import-image.sh" "$env_file" "$layout:${name##*:}" "$name" 2>/dev/null
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: ccm-smoke-ccm
  namespace: default
spec:
  nodeName: $NODE
  hostNetwork: true
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: ccm
    image: $name
    imagePullPolicy: Never
    args: ["--version"]
EOF
  ccm_done() {
    [ "$(k get pod -n default ccm-smoke-ccm -o jsonpath='{.status.phase}')" = Succeeded ]
  }
  until_ok "$WAIT" "pod default/ccm-smoke-ccm (the project's image, --version) Succeeded" ccm_done
  got=$(k logs -n default ccm-smoke-ccm)
  case $got in openstack-cloud-controller-manager\ *) ;; *) fail "the CCM pod printed '$got'" ;; esac
  ok "the project's image ($name) runs as a pod: $got"
else
  echo "[smoke] note: no $layout (scripts/image.sh builds it): the project's image was not run" >&2
fi

printf '[smoke +%3ss] %s checks passed\n' "$(($(date +%s) - t0))" "$checks" >&2
