#!/usr/bin/env bash
# Checks the installation manifests of artifacts/deploy against a real
# control plane: runs go test ./test/deploy/... with a local stack of its
# own (in _output/local-deploy on ports of its own, so it can run beside
# `make run` or `make test-e2e`), and stops the stack afterwards
# (localcluster run, whose command is this script again, with --in-stack).
#
# The stack differs from the default one in these ways:
#   - kube-apiserver writes an audit log of the two ServiceAccounts of
#     artifacts/deploy (test/deploy/testdata/kube-apiserver-audit-policy.yaml)
#     to _output/local-deploy/logs/kube-apiserver-audit.log, and enforces
#     OwnerReferencesPermissionEnforcement;
#   - training-apiserver and training-controller-manager act as their
#     ServiceAccounts, with the RBAC of artifacts/deploy/base
#     (hack/lib/serviceaccounts.sh), the controller with leader election on;
#   - three fake nodes instead of ten;
#   - no Kueue (LOCAL_KUEUE=0 unless set): the controller's role in
#     artifacts/deploy/base is checked without the optional
#     artifacts/deploy/components/kueue, and the controller runs with
#     --queueing=none, as on a cluster that runs no Kueue;
#   - every component runs with KUBE_FEATURE_WatchListClient=false, so
#     informers list and then watch (restart a component of this stack with
#     hack/local-restart.sh only with that variable set, or the controller's
#     list rules go unused).
#
# Usage: hack/verify-deploy.sh [--keep] [go test flags...]
#   --keep   leave the stack running (stop it with
#            LOCAL_DIR=_output/local-deploy hack/local-down.sh); a later run
#            reuses a running stack instead of starting one
# e.g. hack/verify-deploy.sh -run TestRender -v
#
# Settings: LOCAL_DIR (default _output/local-deploy) and the variables of
# hack/local-up.sh; its ports are the defaults moved by LOCAL_PORT_OFFSET,
# 4000 unless set: clear of the default stack, of make test's second lane
# (1000) and of make test-dashboard (3000). Kueue's ports only with
# LOCAL_KUEUE=1.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"

# The stack's settings (on the stack, --in-stack, the stack's own).
if [[ "${1:-}" != --in-stack ]]; then
  export LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local-deploy}"
  # The installation is judged on kwok nodes; the real node has no part in it.
  export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
  export LOCAL_PORT_OFFSET="${LOCAL_PORT_OFFSET:-4000}"
  export LOCAL_FAKE_NODES="${LOCAL_FAKE_NODES:-3}"
  export LOCAL_KUEUE="${LOCAL_KUEUE:-0}"
  # A cluster without Kueue runs the controller with --queueing=none: under the
  # default auto a job that names a queue (every gang job names one) would wait
  # for a Kueue that is not there (docs/kueue.md).
  if [[ "${LOCAL_KUEUE}" != 1 ]]; then
    export LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-} --queueing=none"
  fi
fi

# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/serviceaccounts.sh
source "${HACK_DIR}/lib/serviceaccounts.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

DEPLOY_TEST_DIR="${OUTPUT_DIR}/deploy-test"

if [[ "${1:-}" != --in-stack ]]; then
  keep=0
  go_flags=()
  for arg in "$@"; do
    case "${arg}" in
      --keep) keep=1 ;;
      -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
      *) go_flags+=("${arg}") ;;
    esac
  done

  for c in kubectl training-apiserver training-controller-manager; do
    [[ -x "${BIN_DIR}/${c}" ]] || die "${BIN_DIR#"${REPO_ROOT}/"}/${c} not found; run make build test-binaries"
  done

  mkdir -p "${DEPLOY_TEST_DIR}"
  "${HACK_DIR}/deploy-certs.sh" 2>&1 | sed 's/^/  deploy-certs: /' >&2

  running="$(running_components | tr '\n' ' ')"
  if [[ -n "${running// /}" ]]; then
    log "reusing the stack running in ${LOCAL_DIR#"${REPO_ROOT}/"} (${running% })"
    exec "${HACK_DIR}/verify-deploy.sh" --in-stack "${go_flags[@]}"
  fi
  # The components act as their ServiceAccounts, with an audit log (see
  # TestControllerRoleIsLeastPrivilege).
  use_service_account_identities "${DEPLOY_TEST_DIR}"
  require_stack_packages
  run_flags=()
  if ((keep)); then
    run_flags+=(--keep)
  fi
  localcluster run "${run_flags[@]}" -- "${HACK_DIR}/verify-deploy.sh" --in-stack "${go_flags[@]}"
  exit
fi

# On the stack (started by localcluster run, or one that was running), with
# its settings; the go test flags follow --in-stack.
shift
load_settings
export DEPLOY_REPO_ROOT="${REPO_ROOT}"
export DEPLOY_KUBECTL="${BIN_DIR}/kubectl"
export DEPLOY_BIN_DIR="${BIN_DIR}"
export DEPLOY_KUBECONFIG="${LOCAL_KUBECONFIG}"
export DEPLOY_CERTS_DIR="${OUTPUT_DIR}/deploy-certs"
export DEPLOY_LOCAL_PKI_DIR="${LOCAL_PKI_DIR}"
# The audit log only when this stack writes one (a reused stack may not).
DEPLOY_AUDIT_LOG=""
if [[ "${LOCAL_APISERVER_EXTRA_ARGS:-}" == *"--audit-log-path="* &&
  "${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-}" == *"--kubeconfig=${DEPLOY_TEST_DIR}/"* ]]; then
  DEPLOY_AUDIT_LOG="${LOCAL_LOG_DIR}/kube-apiserver-audit.log"
fi
export DEPLOY_AUDIT_LOG
# The gang scheduling backend the controller's --gang-scheduler=auto picks on
# this stack; its rules are the ones the scenarios use.
DEPLOY_GANG_BACKENDS=""
if [[ "${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-}" == *"--gang-scheduler=coscheduling"* ]]; then
  DEPLOY_GANG_BACKENDS=coscheduling
elif gang_workload_enabled; then
  DEPLOY_GANG_BACKENDS=workload
elif scheduler_plugins_enabled; then
  DEPLOY_GANG_BACKENDS=coscheduling
fi
export DEPLOY_GANG_BACKENDS

cd "${REPO_ROOT}"
log "running go test -count=1 -timeout 20m $* ./test/deploy/..."
rc=0
go_test deploy -count=1 -timeout 20m "$@" ./test/deploy/... || rc=$?
log "go test exited with ${rc}"
exit "${rc}"
