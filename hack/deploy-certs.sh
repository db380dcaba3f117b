#!/usr/bin/env bash
# Creates the serving certificate of training-apiserver for an installation
# without cert-manager, and the kustomize pieces that install it:
#
#   ca.crt, ca.key        a CA for this installation only (kept and reused)
#   tls.crt, tls.key      the serving certificate, signed by that CA, for
#                         training-apiserver, training-apiserver.tensorstack-system,
#                         training-apiserver.tensorstack-system.svc and
#                         training-apiserver.tensorstack-system.svc.<cluster domain>
#   secret.yaml           Secret tensorstack-system/training-apiserver-tls
#                         (kubernetes.io/tls: tls.crt, tls.key, and ca.crt)
#   apiservice-cabundle.yaml  patch: the CA as the APIService's caBundle
#   kustomization.yaml    a kustomize Component made of the two above; used by
#                         artifacts/deploy/overlays/generated-certs
#   etcd/                 the etcd cluster's certificates, as a kustomize
#                         Component of its own (also used by the overlay): an
#                         etcd CA (etcd/ca.crt, etcd/ca.key, kept and reused),
#                         and the Secrets training-etcd-server, training-etcd-peer
#                         (the members, by name, server and client usage) and
#                         training-etcd-client (training-apiserver's, client
#                         usage), each with tls.crt, tls.key and ca.crt
#
# Usage: hack/deploy-certs.sh [options]
#   --out DIR             where to write (default _output/deploy-certs; keep it
#                         out of version control: it holds private keys)
#   --cluster-domain D    the cluster's DNS domain (default cluster.local)
#   --san NAME            one more DNS name or IP address (repeatable)
#                         (both are remembered in DIR/names.env and used again
#                         by later runs that do not give them)
#   --days N              validity of the serving certificate (default 365)
#   --renew               issue new serving and etcd certificates even if the
#                         current ones are still good
#   --new-ca              start over with new CAs (clients must get the new
#                         caBundle: re-apply the overlay; the etcd members and
#                         training-apiserver must restart to trust the new
#                         etcd CA)
#
# Run it again at any time: it keeps the CA, and keeps the serving certificate
# unless it is missing, expires within 30 days, does not carry exactly the
# names asked for, or is not signed by the CA. Then:
#   kubectl apply -k artifacts/deploy/overlays/generated-certs
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

NAMESPACE="tensorstack-system"
SERVICE="training-apiserver"
SECRET="training-apiserver-tls"
APISERVICE="v1beta1.batch.tensorstack.dev"
CA_DAYS=3650
RENEW_WITHIN_SECONDS=$((30 * 24 * 3600))

out="${OUTPUT_DIR}/deploy-certs"
cluster_domain=""
days=365
renew=0
new_ca=0
extra_sans=()
san_given=0
while (($#)); do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --cluster-domain) cluster_domain="${2:?--cluster-domain needs a value}"; shift 2 ;;
    --san) extra_sans+=("${2:?--san needs a value}"); san_given=1; shift 2 ;;
    --days) days="${2:?--days needs a number}"; shift 2 ;;
    --renew) renew=1; shift ;;
    --new-ca) new_ca=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument $1 (see $0 --help)" ;;
  esac
done
[[ "${days}" =~ ^[1-9][0-9]*$ ]] || die "--days must be a positive number, got ${days}"
command -v openssl >/dev/null 2>&1 || die "openssl is needed on PATH"

mkdir -p "${out}"
chmod 700 "${out}"
out="$(cd "${out}" && pwd)"

# The names of the last run, unless given now.
if [[ -f "${out}/names.env" ]]; then
  # shellcheck source=/dev/null
  source "${out}/names.env"
  [[ -n "${cluster_domain}" ]] || cluster_domain="${saved_cluster_domain:-}"
  ((san_given)) || extra_sans=("${saved_extra_sans[@]}")
fi
[[ -n "${cluster_domain}" ]] || cluster_domain="cluster.local"
{
  echo "# Written by hack/deploy-certs.sh: the names of the serving certificate."
  printf 'saved_cluster_domain=%q\n' "${cluster_domain}"
  printf 'saved_extra_sans=('
  for san in "${extra_sans[@]}"; do printf '%q ' "${san}"; done
  printf ')\n'
} >"${out}/names.env"

sans=(
  "${SERVICE}"
  "${SERVICE}.${NAMESPACE}"
  "${SERVICE}.${NAMESPACE}.svc"
  "${SERVICE}.${NAMESPACE}.svc.${cluster_domain}"
  "${extra_sans[@]}"
)

# san_list prints the subjectAltName value for openssl: DNS:a,IP:b,...
san_list() {
  local entry list=""
  for entry in "$@"; do
    if [[ "${entry}" =~ ^[0-9.]+$ || "${entry}" == *:* ]]; then
      list+="${list:+,}IP:${entry}"
    else
      list+="${list:+,}DNS:${entry}"
    fi
  done
  printf '%s\n' "${list}"
}

# cert_sans FILE prints the certificate's subject alternative names, one per
# line, sorted, in openssl's spelling (DNS:name, IP Address:ip).
cert_sans() {
  openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null |
    tail -n +2 | tr ',' '\n' | sed -e 's/^ *//' -e '/^$/d' | sort
}

# wanted_sans prints the names asked for, in the same form as cert_sans.
wanted_sans() {
  san_list "${sans[@]}" | tr ',' '\n' | sed -e 's/^IP:/IP Address:/' | sort -u
}

# valid_for_a_while FILE: the certificate does not expire within 30 days.
valid_for_a_while() {
  openssl x509 -in "$1" -noout -checkend "${RENEW_WITHIN_SECONDS}" >/dev/null 2>&1
}

ca_crt="${out}/ca.crt" ca_key="${out}/ca.key" new_ca_made=0
if ((new_ca)) || [[ ! -s "${ca_crt}" || ! -s "${ca_key}" ]] || ! valid_for_a_while "${ca_crt}"; then
  log "creating a new CA in ${out#"${REPO_ROOT}/"}"
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
      -days "${CA_DAYS}" -keyout "${ca_key}" -out "${ca_crt}" \
      -subj "/CN=tensorstack-training-ca" \
      -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1
  ) || die "openssl: creating the CA failed"
  new_ca_made=1
else
  log "reusing the CA in ${out#"${REPO_ROOT}/"}"
fi

tls_crt="${out}/tls.crt" tls_key="${out}/tls.key"
reason=""
if ((new_ca_made)); then
  reason="the CA is new"
elif ((renew)); then
  reason="--renew"
elif [[ ! -s "${tls_crt}" || ! -s "${tls_key}" ]]; then
  reason="there is none"
elif ! valid_for_a_while "${tls_crt}"; then
  reason="the current one expires within 30 days"
elif ! openssl verify -CAfile "${ca_crt}" "${tls_crt}" >/dev/null 2>&1; then
  reason="the current one is not signed by the CA"
elif [[ "$(cert_sans "${tls_crt}")" != "$(wanted_sans)" ]]; then
  reason="the current one has other names"
fi

if [[ -n "${reason}" ]]; then
  log "issuing the serving certificate (${reason}): $(san_list "${sans[@]}")"
  tmp="$(mktemp -d)"
  trap 'rm -rf "${tmp}"' EXIT
  cat >"${tmp}/ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$(san_list "${sans[@]}")
EOF
  (
    umask 077
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
      -keyout "${tmp}/tls.key" -out "${tmp}/tls.csr" \
      -subj "/CN=${SERVICE}.${NAMESPACE}.svc" >/dev/null 2>&1 &&
      openssl x509 -req -sha256 -days "${days}" -in "${tmp}/tls.csr" \
        -CA "${ca_crt}" -CAkey "${ca_key}" -CAcreateserial -CAserial "${tmp}/ca.srl" \
        -extfile "${tmp}/ext" -out "${tmp}/tls.crt" >/dev/null 2>&1
  ) || die "openssl: issuing the serving certificate failed"
  mv -f "${tmp}/tls.key" "${tls_key}"
  mv -f "${tmp}/tls.crt" "${tls_crt}"
else
  log "keeping the serving certificate (valid until $(openssl x509 -in "${tls_crt}" -noout -enddate | cut -d= -f2))"
fi

b64() { base64 -w0 <"$1"; }

(
  umask 077
  cat >"${out}/secret.yaml" <<EOF
# Written by hack/deploy-certs.sh. Holds a private key: do not commit it.
apiVersion: v1
kind: Secret
metadata:
  name: ${SECRET}
  namespace: ${NAMESPACE}
  labels:
    app.kubernetes.io/name: training-apiserver
    app.kubernetes.io/part-of: tensorstack-training
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "${tls_crt}")
  tls.key: $(b64 "${tls_key}")
  ca.crt: $(b64 "${ca_crt}")
EOF
)

cat >"${out}/apiservice-cabundle.yaml" <<EOF
# Written by hack/deploy-certs.sh: kube-apiserver trusts this CA, and only
# this one, for ${APISERVICE}.
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: ${APISERVICE}
spec:
  caBundle: $(b64 "${ca_crt}")
EOF

cat >"${out}/kustomization.yaml" <<EOF
# Written by hack/deploy-certs.sh: the serving certificate of
# training-apiserver and the matching caBundle, as a kustomize Component.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
- secret.yaml
patches:
- path: apiservice-cabundle.yaml
EOF

# The etcd cluster's certificates: a CA of their own, since a certificate
# of the serving CA must not open etcd.
etcd_out="${out}/etcd"
mkdir -p "${etcd_out}"
chmod 700 "${etcd_out}"
etcd_ca_crt="${etcd_out}/ca.crt" etcd_ca_key="${etcd_out}/ca.key" new_etcd_ca=0
if ((new_ca)) || [[ ! -s "${etcd_ca_crt}" || ! -s "${etcd_ca_key}" ]] || ! valid_for_a_while "${etcd_ca_crt}"; then
  log "creating a new etcd CA in ${etcd_out#"${REPO_ROOT}/"}"
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
      -days "${CA_DAYS}" -keyout "${etcd_ca_key}" -out "${etcd_ca_crt}" \
      -subj "/CN=tensorstack-training-etcd-ca" \
      -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1
  ) || die "openssl: creating the etcd CA failed"
  new_etcd_ca=1
fi

etcd_domain="training-etcd.${NAMESPACE}.svc"
etcd_members="DNS:training-etcd-0.${etcd_domain},DNS:training-etcd-1.${etcd_domain},DNS:training-etcd-2.${etcd_domain},DNS:*.${etcd_domain},DNS:${etcd_domain}"
# issue_etcd ROLE CN EXTENDED-KEY-USAGE [SANS]: etcd/ROLE.crt and .key,
# unless a good one is there.
issue_etcd() {
  local role="$1" cn="$2" eku="$3" sans="${4:-}" crt="${etcd_out}/$1.crt" key="${etcd_out}/$1.key" why=""
  if ((new_etcd_ca)); then
    why="the etcd CA is new"
  elif ((renew)); then
    why="--renew"
  elif [[ ! -s "${crt}" || ! -s "${key}" ]]; then
    why="there is none"
  elif ! valid_for_a_while "${crt}"; then
    why="the current one expires within 30 days"
  elif ! openssl verify -CAfile "${etcd_ca_crt}" "${crt}" >/dev/null 2>&1; then
    why="the current one is not signed by the etcd CA"
  fi
  if [[ -z "${why}" ]]; then
    return 0
  fi
  log "issuing the etcd ${role} certificate (${why})"
  local tmp
  tmp="$(mktemp -d)"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=${eku}"
    [[ -z "${sans}" ]] || echo "subjectAltName=${sans}"
  } >"${tmp}/ext"
  (
    umask 077
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
      -keyout "${tmp}/tls.key" -out "${tmp}/tls.csr" -subj "/CN=${cn}" >/dev/null 2>&1 &&
      openssl x509 -req -sha256 -days "${days}" -in "${tmp}/tls.csr" \
        -CA "${etcd_ca_crt}" -CAkey "${etcd_ca_key}" -CAcreateserial -CAserial "${tmp}/ca.srl" \
        -extfile "${tmp}/ext" -out "${tmp}/tls.crt" >/dev/null 2>&1
  ) || {
    rm -rf "${tmp}"
    die "openssl: issuing the etcd ${role} certificate failed"
  }
  mv -f "${tmp}/tls.key" "${key}"
  mv -f "${tmp}/tls.crt" "${crt}"
  rm -rf "${tmp}"
}
issue_etcd server training-etcd serverAuth,clientAuth "${etcd_members},DNS:localhost,IP:127.0.0.1,IP:::1"
issue_etcd peer training-etcd-peer serverAuth,clientAuth "${etcd_members}"
issue_etcd client training-apiserver clientAuth

(
  umask 077
  for role in server peer client; do
    [[ "${role}" == server ]] || echo "---"
    cat <<EOF
# Written by hack/deploy-certs.sh. Holds a private key: do not commit it.
apiVersion: v1
kind: Secret
metadata:
  name: training-etcd-${role}
  namespace: ${NAMESPACE}
  labels:
    app.kubernetes.io/part-of: tensorstack-training
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "${etcd_out}/${role}.crt")
  tls.key: $(b64 "${etcd_out}/${role}.key")
  ca.crt: $(b64 "${etcd_ca_crt}")
EOF
  done >"${etcd_out}/secrets.yaml"
)
cat >"${etcd_out}/kustomization.yaml" <<EOF
# Written by hack/deploy-certs.sh: the etcd cluster's certificates, as a
# kustomize Component.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
- secrets.yaml
EOF

log "wrote ${out#"${REPO_ROOT}/"}/{secret.yaml,apiservice-cabundle.yaml,kustomization.yaml,etcd/}"
if [[ "${out}" == "${OUTPUT_DIR}/deploy-certs" ]]; then
  log "install with: kubectl apply -k artifacts/deploy/overlays/generated-certs"
fi
