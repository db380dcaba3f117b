#!/usr/bin/env bash
# Undoes hack/local-install.sh: uninstalls the release as docs/install.md
# says (jobs, APIService, install.yaml), then starts the stack's own
# training-apiserver and training-controller-manager again, with their
# APIService and roles: only what the stack itself ran, nothing on a stack
# started with LOCAL_SKIP_TRAINING=1 (which has none of them).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

load_settings
install_yaml="${OUTPUT_DIR}/local-release/install.yaml"
[[ -f "${install_yaml}" ]] || die "no ${install_yaml#"${REPO_ROOT}/"}: nothing was installed with make local-install"
start=${SECONDS}
kubectl_local delete tj,pj --all --all-namespaces --wait --timeout=5m >/dev/null
kubectl_local delete apiservice "${TRAINING_APISERVICE}" --ignore-not-found >/dev/null
registry_install_yaml "${install_yaml}" |
  kubectl_local delete --ignore-not-found --wait --timeout=5m -f - >/dev/null
if ! training_enabled; then
  log "uninstalled in $((SECONDS - start))s; the stack runs no training components of its own (LOCAL_SKIP_TRAINING=1): nothing to restore"
  exit 0
fi
log "uninstalled in $((SECONDS - start))s; starting the stack's own training-apiserver and controller-manager"
kubectl_local apply -f "${LOCAL_CONFIG_DIR}/training-apiservice.yaml" >/dev/null
"${HACK_DIR}/local-restart.sh" --start training-apiserver
"${HACK_DIR}/local-restart.sh" --start training-controller-manager
for f in rbac-users rbac-progress priorityclasses flowcontrol; do
  kubectl_local apply -f "${REPO_ROOT}/artifacts/deploy/base/${f}.yaml" >/dev/null
done
