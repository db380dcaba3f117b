#!/usr/bin/env bash
# A client-go exec credential plugin that makes training-controller-manager
# act as its ServiceAccount on the local stack, instead of as the admin:
# it applies the ServiceAccounts and the controller's RBAC from
# artifacts/deploy/base, then prints a token of
# tensorstack-system/training-controller-manager (kubectl create token,
# valid 24 h) as an ExecCredential. client-go runs it when the controller
# starts and again when the token is about to expire.
#
# hack/verify-deploy.sh writes a kubeconfig that names this plugin and starts
# the local stack with
#   LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="--kubeconfig=<that file> ..."
# A plugin rather than a file with a token: the stack's ServiceAccount
# signing key exists only once hack/local-up.sh has started, and the
# controller starts within the same script run.
#
# Usage (as the exec command of a kubeconfig): controller-credential.sh KUBECTL ADMIN_KUBECONFIG
set -euo pipefail

kubectl="${1:?usage: $0 KUBECTL ADMIN_KUBECONFIG}"
admin="${2:?usage: $0 KUBECTL ADMIN_KUBECONFIG}"
base="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../artifacts/deploy/base" && pwd)"

k() { "${kubectl}" --kubeconfig="${admin}" "$@"; }

# stdout is the credential; everything else goes to stderr (the controller's log).
k apply -f "${base}/serviceaccounts.yaml" -f "${base}/rbac-controller-manager.yaml" >&2
# jsonpath prints no final newline: read then returns 1 at end of input.
read -r token expires < <(k create token training-controller-manager -n tensorstack-system \
  --duration=24h -o jsonpath='{.status.token} {.status.expirationTimestamp}') || true
[[ -n "${token}" && -n "${expires}" ]] || { echo "no token for training-controller-manager" >&2; exit 1; }
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "${token}" "${expires}"
