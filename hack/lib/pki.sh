#!/usr/bin/env bash
# PKI helpers for the local control plane, built on openssl. Source it after
# hack/lib/common.sh. Every function writes into the directory given as its
# first argument. Keys are ECDSA P-256 (fast to generate), certificates are
# valid for 10 years: this is throw-away test PKI for a cluster bound to 127.0.0.1.

PKI_DAYS=3650
PKI_KEY_OPTS=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)

# pki_ca DIR NAME CN: a self-signed CA, DIR/NAME.crt and DIR/NAME.key.
pki_ca() {
  local dir="$1" name="$2" cn="$3"
  openssl req -x509 "${PKI_KEY_OPTS[@]}" -nodes -sha256 -days "${PKI_DAYS}" \
    -keyout "${dir}/${name}.key" -out "${dir}/${name}.crt" \
    -subj "/CN=${cn}" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    >/dev/null 2>&1 || die "openssl: creating CA ${name} failed"
}

# pki_cert DIR CA NAME SUBJECT KIND [SAN...]
# Issues DIR/NAME.crt and DIR/NAME.key signed by DIR/CA.{crt,key}.
# SUBJECT is an openssl subject such as "/O=system:masters/CN=admin".
# KIND is client, server or both. SANs are IP addresses or DNS names.
pki_cert() {
  local dir="$1" ca="$2" name="$3" subject="$4" kind="$5"
  shift 5
  local eku san="" entry ext
  case "${kind}" in
    client) eku="clientAuth" ;;
    server) eku="serverAuth" ;;
    both) eku="serverAuth,clientAuth" ;;
    *) die "pki_cert: unknown kind ${kind}" ;;
  esac
  for entry in "$@"; do
    if [[ "${entry}" =~ ^[0-9.]+$ || "${entry}" == *:* ]]; then
      san+="${san:+,}IP:${entry}"
    else
      san+="${san:+,}DNS:${entry}"
    fi
  done
  ext="${dir}/${name}.ext"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=${eku}"
    if [[ -n "${san}" ]]; then echo "subjectAltName=${san}"; fi
  } >"${ext}"
  openssl req -new "${PKI_KEY_OPTS[@]}" -nodes -sha256 \
    -keyout "${dir}/${name}.key" -out "${dir}/${name}.csr" -subj "${subject}" \
    >/dev/null 2>&1 || die "openssl: creating the request for ${name} failed"
  openssl x509 -req -sha256 -days "${PKI_DAYS}" -in "${dir}/${name}.csr" \
    -CA "${dir}/${ca}.crt" -CAkey "${dir}/${ca}.key" -CAcreateserial \
    -extfile "${ext}" -out "${dir}/${name}.crt" \
    >/dev/null 2>&1 || die "openssl: signing ${name} with ${ca} failed"
  rm -f "${dir}/${name}.csr" "${ext}"
}

# pki_keypair DIR NAME: a key pair DIR/NAME.key and DIR/NAME.pub
# (service-account token signing, ES256).
pki_keypair() {
  local dir="$1" name="$2"
  openssl ecparam -name prime256v1 -genkey -noout -out "${dir}/${name}.key" >/dev/null 2>&1 ||
    die "openssl: creating key ${name} failed"
  openssl ec -in "${dir}/${name}.key" -pubout -out "${dir}/${name}.pub" >/dev/null 2>&1 ||
    die "openssl: extracting public key ${name} failed"
}

# write_kubeconfig FILE SERVER CA_FILE CERT_FILE KEY_FILE USER
# A kubeconfig with everything embedded, so it can be copied anywhere.
write_kubeconfig() {
  local file="$1" server="$2" ca="$3" cert="$4" key="$5" user="$6"
  cat >"${file}" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: ${server}
    certificate-authority-data: $(base64 -w0 <"${ca}")
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 <"${cert}")
    client-key-data: $(base64 -w0 <"${key}")
contexts:
- name: local
  context:
    cluster: local
    user: ${user}
current-context: local
KUBECONFIG
  chmod 600 "${file}"
}
