#!/usr/bin/env bash
# A client-go exec credential plugin that makes one of our components act as
# its ServiceAccount on the local stack instead of as the admin: it applies
# the ServiceAccounts and the component's RBAC from artifacts/deploy/base,
# then prints a token of tensorstack-system/<service-account> (kubectl create
# token, valid 24 h) as an ExecCredential. client-go runs it when the
# component starts and again when the token is about to expire.
#
# hack/lib/serviceaccounts.sh writes kubeconfigs that name this plugin.
# A plugin rather than a file with a token: the stack's ServiceAccount
# signing key exists only once hack/local-up.sh has started kube-apiserver,
# and our components start within the same script run.
#
# Usage (as the exec command of a kubeconfig):
#   serviceaccount-credential.sh KUBECTL ADMIN_KUBECONFIG SERVICE_ACCOUNT RBAC_FILE [RBAC_FILE...]
# RBAC files are relative to artifacts/deploy/base (an optional component's:
# ../components/<name>/<file>).
set -euo pipefail

usage="usage: $0 KUBECTL ADMIN_KUBECONFIG SERVICE_ACCOUNT RBAC_FILE [RBAC_FILE...]"
kubectl="${1:?${usage}}"
admin="${2:?${usage}}"
account="${3:?${usage}}"
: "${4:?${usage}}"
shift 3
base="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../artifacts/deploy/base" && pwd)"

# The stack's own discovery cache (see kubectl_local in hack/lib/local.sh and kubectl in internal/localcluster):
# this runs before the training-apiserver serves.
k() { "${kubectl}" --kubeconfig="${admin}" --cache-dir="$(dirname "${admin}")/kubectl-cache" "$@"; }

files=(-f "${base}/serviceaccounts.yaml")
for rbac in "$@"; do
  files+=(-f "${base}/${rbac}")
done
# stdout is the credential; everything else goes to stderr (the component's log).
k apply "${files[@]}" >&2
# jsonpath prints no final newline: read then returns 1 at end of input.
read -r token expires < <(k create token "${account}" -n tensorstack-system \
  --duration=24h -o jsonpath='{.status.token} {.status.expirationTimestamp}') || true
[[ -n "${token}" && -n "${expires}" ]] || { echo "no token for ${account}" >&2; exit 1; }
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "${token}" "${expires}"
