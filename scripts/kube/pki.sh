# shellcheck shell=bash
# The test cluster's certificates and keys (sourced by scripts/kube-up.sh, never run), minted
# with openssl into $PKI at every fresh start, valid 30 days. Four CAs, as a real cluster
# keeps them apart:
#   etcd-ca     etcd's serving certificate and the API server's etcd client certificate
#   server-ca   serving certificates of the API server (127.0.0.1, localhost, the in-cluster
#               names and the first service IP) and of the kubelet (localhost); what a client
#               trusts. Like the installer's kube-apiserver-localhost CA bundle.
#   client-ca   every client certificate the API server and the kubelet accept: admin
#               (system:masters), kube-controller-manager, the kubelet (system:node:localhost),
#               the API server's own kubelet client. RSA 2048 with its key in PKCS#1 form
#               ("RSA PRIVATE KEY"), as the installer's kube-control-plane-signer, so a test can
#               hand it to the generator as DIR/tls/kube-control-plane-signer.{crt,key}.
#   front-proxy-ca  the aggregation layer's request-header client (front-proxy-client), so that
#               the controller-manager's delegated authentication finds its configuration.
# Plus the service-account signing key pair (RSA 2048).

# sign NAME CA SUBJECT EXTENSIONS...: a key and a certificate NAME.{key,crt} signed by CA.
sign() {
  local name=$1 ca=$2 subject=$3
  shift 3
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$subject" \
    -keyout "$name.key" -out "$name.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "$@" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 30 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

# ca NAME CN [rsa]: a self-signed CA NAME.{key,crt}.
ca() {
  local key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
  if [ "${3:-}" = rsa ]; then
    openssl genrsa -traditional -out "$1.key" 2048 2>/dev/null
    key=(-key "$1.key")
  else
    key+=(-keyout "$1.key")
  fi
  openssl req -x509 "${key[@]}" -nodes -days 30 -subj "/CN=$2" -out "$1.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2>/dev/null
}

mint_pki() (
  mkdir -p "$PKI"
  cd "$PKI" || exit 1
  umask 077
  local usage=keyUsage=critical,digitalSignature,keyEncipherment
  local server=("$usage" extendedKeyUsage=serverAuth) client=("$usage" extendedKeyUsage=clientAuth)
  local first_service_ip=${SERVICE_CIDR%.*/*}.1

  ca etcd-ca "ccm-assets test etcd CA"
  sign etcd-server etcd-ca /CN=etcd "${server[@]}" "subjectAltName=IP:127.0.0.1,DNS:localhost"
  sign apiserver-etcd-client etcd-ca /CN=kube-apiserver-etcd-client "${client[@]}"

  ca server-ca "ccm-assets test kube server CA"
  local names=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
  names+=,DNS:kubernetes.default.svc.cluster.local
  sign apiserver server-ca /CN=kube-apiserver "${server[@]}" \
    "subjectAltName=IP:127.0.0.1,IP:$first_service_ip,DNS:localhost,$names"
  sign kubelet-server server-ca "/CN=$NODE_NAME" "${server[@]}" \
    "subjectAltName=IP:127.0.0.1,DNS:$NODE_NAME"

  ca client-ca "ccm-assets test kube client CA" rsa
  sign admin client-ca /O=system:masters/CN=ccm-assets-admin "${client[@]}"
  sign kube-controller-manager client-ca /CN=system:kube-controller-manager "${client[@]}"
  sign kubelet client-ca "/O=system:nodes/CN=system:node:$NODE_NAME" "${client[@]}"
  sign apiserver-kubelet-client client-ca /O=system:masters/CN=kube-apiserver-kubelet-client \
    "${client[@]}"

  ca front-proxy-ca "ccm-assets test kube front-proxy CA"
  sign front-proxy-client front-proxy-ca /CN=front-proxy-client "${client[@]}"

  openssl genrsa -traditional -out service-account.key 2048 2>/dev/null
  openssl rsa -in service-account.key -pubout -out service-account.pub 2>/dev/null
  rm -f ./*.srl
  # Certificates are public; the tests read the client CA key to sign their own certificates.
  chmod 644 ./*.crt service-account.pub
)

# kubeconfig USER CERT_NAME: a kubeconfig for the API server with the client certificate
# $PKI/CERT_NAME.{crt,key} embedded.
kubeconfig() {
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ccm-kube
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 "$PKI/server-ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$2.crt")
    client-key-data: $(base64 -w0 "$PKI/$2.key")
contexts:
- name: $1@ccm-kube
  context:
    cluster: ccm-kube
    user: $1
current-context: $1@ccm-kube
EOF
}
