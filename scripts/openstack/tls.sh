# shellcheck shell=bash disable=SC2034 # TLS_PACKAGES is for openstack-up.sh
# The stack's TLS front (sourced by openstack-up.sh, never run): a private CA, a server
# certificate for 127.0.0.1 and localhost signed by it, and Debian's nginx terminating TLS in
# front of every API on its own port (the plain port + TLS_PORT_OFFSET, common.sh), so that `cacert`,
# `ca-file`, `verify: false` and `tls-insecure` meet a real TLS endpoint. The plain ports stay
# as they are; Keystone's catalog gets the HTTPS URLs in a region of their own (RegionTLS).
#
# Why nginx: one process fronts every service, and its sub_filter rewrites the plain base URLs
# the services write into their answers (version documents and their links, the token's catalog)
# into the HTTPS ones, so a client that follows a link stays on TLS. haproxy and stunnel pass
# bodies through unchanged: a client would be sent back to plain HTTP by the first version
# document.
#
# The certificates are minted with openssl at every fresh start, valid 30 days.

TLS_PACKAGES=(nginx openssl)
TLS_DIR=$OPENSTACK_DIR/tls

# tls_url URL: the HTTPS front of a plain http://127.0.0.1:PORT… URL.
tls_url() {
  local rest=${1#http://127.0.0.1:} port
  port=${rest%%[!0-9]*}
  echo "https://127.0.0.1:$((port + TLS_PORT_OFFSET))${rest#"$port"}"
}

# The CA, and the server certificate for IP 127.0.0.1 and DNS localhost (EC P-256 keys).
mint_certificates() {
  mkdir -p "$TLS_DIR"
  (
    cd "$TLS_DIR" || exit 1
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
      -subj "/CN=ccm-assets test stack CA" -keyout ca.key -out ca.pem \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
      -keyout server.key -out server.csr
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
      -extfile server.ext -out server.pem
    chmod 644 ca.pem server.pem
  )
}

# nginx.conf: one TLS server per plain port given, every plain base URL rewritten in bodies.
nginx_conf() {
  local port subs=""
  for port in "$@"; do
    subs+="    sub_filter 'http://127.0.0.1:$port' 'https://127.0.0.1:$((port + TLS_PORT_OFFSET))';"$'\n'
  done
  cat <<EOF
# written by scripts/openstack-up.sh: the TLS front of the test stack
worker_processes 1;
pid $TLS_DIR/nginx.pid;
error_log $LOG/nginx.log warn;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $TLS_DIR/tmp/body;
    proxy_temp_path $TLS_DIR/tmp/proxy;
    fastcgi_temp_path $TLS_DIR/tmp/fastcgi;
    uwsgi_temp_path $TLS_DIR/tmp/uwsgi;
    scgi_temp_path $TLS_DIR/tmp/scgi;
    client_max_body_size 0;
    ssl_certificate $TLS_DIR/server.pem;
    ssl_certificate_key $TLS_DIR/server.key;
    proxy_http_version 1.1;
    proxy_read_timeout 300s;
    # Bodies are rewritten, so they must reach nginx uncompressed.
    proxy_set_header Accept-Encoding "";
    proxy_set_header X-Forwarded-Proto https;
    sub_filter_once off;
    sub_filter_types *;
$subs
EOF
  for port in "$@"; do
    printf '    server {\n        listen 127.0.0.1:%s ssl;\n' "$((port + TLS_PORT_OFFSET))"
    printf '        location / { proxy_pass http://127.0.0.1:%s; }\n    }\n' "$port"
  done
  echo "}"
}

# Mints the certificates and starts nginx in front of the plain ports given.
start_tls_front() {
  mint_certificates >"$LOG/tls-mint.out" 2>&1 || {
    cat "$LOG/tls-mint.out" >&2
    die "minting the test CA and server certificate failed"
  }
  mkdir -p "$TLS_DIR/tmp"
  nginx_conf "$@" >"$TLS_DIR/nginx.conf"
  start_service nginx nginx -e "$LOG/nginx.log" -c "$TLS_DIR/nginx.conf" -g "daemon off;"
}
