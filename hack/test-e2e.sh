#!/usr/bin/env bash
# End-to-end tests: runs go test ./test/e2e/... on a local control plane of
# its own (localcluster run, which always stops it again). Exits with go
# test's exit code. What runs on the stack is this script again, with
# --in-stack, as localcluster run's command.
#
# The tests get:
#   KUBECONFIG       _output/local/kubeconfig (admin, system:masters)
#   KUBECTL          _output/bin/kubectl (v1.37.1)
#   E2E_REPO_ROOT    the repository root
#   E2E_LOCAL_DIR    _output/local (state.json, logs/<component>.log)
#   E2E_RESTART      hack/local-restart.sh: "$E2E_RESTART [--stop|--start] training-apiserver"
#   E2E_FAKE_NODES   number of fake (kwok) nodes; E2E_NODE_GPUS: nvidia.com/gpu per node
#   E2E_REAL_NODE    1 when the stack runs real nodes (internal/localcluster)
#   E2E_REAL_NODES   how many
#   E2E_KUEUE_PODS_READY_TIMEOUT  Kueue's waitForPodsReady timeout (90s here)
#   E2E_KUEUE_V1BETA1  1 when the stack serves Kueue's v1beta1 (0 here, as Kueue v0.20)
#   E2E_MULTIKUEUE_WORKER_KUBECONFIG  the admin kubeconfig of the MultiKueue worker
#                    cluster (LOCAL_MULTIKUEUE=1, the default here)
# TestRealNodeDashboard runs pkg/dashboard/ui/test/realnodes.test.mjs in
# Debian's Chromium (installed here when run as root, as make test-dashboard
# does). After the stack is down, it fails when the real nodes left anything on the
# host (localcluster run checks).
# Extra go test flags: E2E_GO_TEST_FLAGS (e.g. "-run TestPause -v").
# A whole run (no E2E_GO_TEST_FLAGS) leaves out TestEveryKindAtTheReplicaCapMakesSmallPods,
# which make test-chaos runs alone on its stack, and runs the gang tests again
# with coscheduling; it, or E2E_PYTHON=1, then runs the Python client's e2e
# tests on the same stack (hack/test-python.sh e2e).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The stack's settings (on the stack, --in-stack, the stack's own).
if [[ "${1:-}" != --in-stack ]]; then
  # Kueue as v0.20 serves it (v1beta1 unserved: the controller must not need
  # it), with waitForPodsReady's timeout short enough for a test to pass it,
  # and long enough that the pods of a job admitted while make test's other
  # lane loads both cores start within it (at 60s, jobs of 8 pods were
  # evicted on a loaded machine before their last pod was created).
  export LOCAL_KUEUE_V1BETA1="${LOCAL_KUEUE_V1BETA1:-0}"
  export LOCAL_KUEUE_PODS_READY_TIMEOUT="${LOCAL_KUEUE_PODS_READY_TIMEOUT:-90s}"
  # A MultiKueue worker cluster beside the stack (internal/localcluster/spec/stack.go), for
  # TestMultiKueue.
  export LOCAL_MULTIKUEUE="${LOCAL_MULTIKUEUE:-1}"
  # Kueue's management of jobs that name no queue, as an admin sets the
  # controller to match Kueue's Configuration, for the namespaces the tests of
  # test/e2e/kueue_failclosed_test.go label only; and a short recheck of
  # whether Kueue may be used, for the tests that take it away.
  export LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-} --manage-jobs-without-queue-name=true --managed-jobs-namespace-selector=e2e.tensorstack.dev/kueue-managed=true --queueing-recheck-period=2s"
fi
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/serviceaccounts.sh
source "${HACK_DIR}/lib/serviceaccounts.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"
# shellcheck source=hack/lib/browser.sh
source "${HACK_DIR}/lib/browser.sh"

if [[ "${1:-}" != --in-stack ]]; then
  refuse_running_stack
  # TestRealNodeDashboard drives the dashboard in Chromium against a job on the
  # real nodes.
  require_browser "the dashboard's real-node browser test"
  # Our components run as the ServiceAccounts of artifacts/deploy, so every
  # scenario also shows the installation's RBAC is enough.
  use_service_account_identities "${LOCAL_DIR}-identities"
  require_stack_packages
  localcluster run -- "${HACK_DIR}/test-e2e.sh" --in-stack
  exit
fi

# On the stack, as localcluster run's command, with the stack's environment
# (KUBECONFIG, LOCAL_DIR and its settings).
cd "${REPO_ROOT}"
export KUBECTL="${BIN_DIR}/kubectl"
export E2E_REPO_ROOT="${REPO_ROOT}"
export E2E_LOCAL_DIR="${LOCAL_DIR}"
export E2E_RESTART="${HACK_DIR}/local-restart.sh"
export E2E_FAKE_NODES="${LOCAL_FAKE_NODES}"
export E2E_NODE_GPUS="${LOCAL_NODE_GPUS}"
export E2E_REAL_NODE="${LOCAL_REAL_NODE_RUNNING}"
export E2E_REAL_NODES="${LOCAL_REAL_NODES_RUNNING}"
export E2E_KUEUE_PODS_READY_TIMEOUT="${LOCAL_KUEUE_PODS_READY_TIMEOUT}"
export E2E_KUEUE_V1BETA1="${LOCAL_KUEUE_V1BETA1}"
if multikueue_enabled; then
  export E2E_MULTIKUEUE_WORKER_KUBECONFIG="${MULTIKUEUE_WORKER_DIR}/kubeconfig"
fi

# Word splitting of the extra flags is intended.
# shellcheck disable=SC2086
set -- ${E2E_GO_TEST_FLAGS:-}
# The controller's --gang-scheduler=auto picks the Workload API when the
# stack serves it, else coscheduling; the gang tests check the backend's
# objects.
export E2E_GANG_BACKEND=none
if gang_workload_enabled; then
  E2E_GANG_BACKEND=workload
elif scheduler_plugins_enabled; then
  E2E_GANG_BACKEND=coscheduling
fi
# A whole run leaves the test of 1,000-replica jobs to make test-chaos's
# stack (hack/test-chaos.sh), where it runs alone: here Go would start the
# parallel tests, the real-node ones among them, only once it had ended, and
# its 5,000 pods slow the tests whose timing matters (Kueue's PodsReady
# timeout).
whole_run=0
if [[ -z "${E2E_GO_TEST_FLAGS:-}" ]]; then
  whole_run=1
  set -- -skip "${WIDE_E2E_TEST}"
fi
log "running go test -count=1 -timeout 70m $* ./test/e2e/... (gang scheduling backend: ${E2E_GANG_BACKEND})"
rc=0
go_test e2e -count=1 -timeout 70m "$@" ./test/e2e/... || rc=$?
log "go test exited with ${rc}"
((rc == 0)) || exit "${rc}"

# The gang tests once more with the other backend, coscheduling: the
# controller restarted with it, as a cluster running only scheduler-plugins
# would have it.
gang_backends="${E2E_GANG_BACKEND/none/}"
if [[ "${E2E_GANG_BACKEND}" == workload ]] && ((whole_run)) && scheduler_plugins_enabled; then
  gang_backends="workload coscheduling"
  localcluster set "LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS=${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS} --gang-scheduler=coscheduling"
  "${HACK_DIR}/local-restart.sh" training-controller-manager
  export E2E_GANG_BACKEND=coscheduling
  log "running the gang tests again with the coscheduling backend"
  go_test e2e-coscheduling -count=1 -timeout 10m -run '^TestGang' ./test/e2e/... || rc=$?
  log "go test exited with ${rc}"
  ((rc == 0)) || exit "${rc}"
fi

# The Python client against the same stack (python/tests/e2e), on a whole
# run; its quick start trains on the real node.
if [[ -z "${E2E_GO_TEST_FLAGS:-}" || "${E2E_PYTHON:-0}" == 1 ]]; then
  log "running the Python client's e2e tests"
  "${HACK_DIR}/test-python.sh" e2e || rc=$?
  ((rc == 0)) || exit "${rc}"
fi

# With the whole suite in the audit log: nothing the controller did was
# refused, and every rule of its role was used (removing one breaks something).
export DEPLOY_REPO_ROOT="${REPO_ROOT}" DEPLOY_KUBECTL="${BIN_DIR}/kubectl" DEPLOY_BIN_DIR="${BIN_DIR}"
export DEPLOY_KUBECONFIG="${LOCAL_KUBECONFIG}" DEPLOY_LOCAL_PKI_DIR="${LOCAL_PKI_DIR}"
export DEPLOY_CERTS_DIR="${OUTPUT_DIR}/deploy-certs" DEPLOY_AUDIT_LOG="${SERVICE_ACCOUNT_AUDIT_LOG}"
export DEPLOY_GANG_BACKENDS="${gang_backends}"
log "walking the controller's RBAC rules over the e2e audit log"
go_test controller-rbac -count=1 -timeout 10m -run '^TestControllerRoleIsLeastPrivilege$' ./test/deploy/ || rc=$?
exit "${rc}"
