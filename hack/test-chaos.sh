#!/usr/bin/env bash
# The chaos suite: starts the local control plane (localcluster run) with the
# training-apiserver on an etcd of its own (a separate process, so the suite
# can freeze it) and kube-apiserver writing an audit log of the writes to
# pods, jobs and the controller's Lease; runs (on a whole run) the e2e
# suite's test of 1,000-replica jobs alone, then go test ./test/chaos/; always
# stops the control plane, that etcd and the suite's extra
# controller-managers again. Exits with go test's exit code. What runs on the
# stack is this script again, with --in-stack, as localcluster run's command.
#
# The test gets the environment of hack/test-e2e.sh (KUBECONFIG, KUBECTL,
# E2E_REPO_ROOT, E2E_LOCAL_DIR, E2E_RESTART, E2E_FAKE_NODES, E2E_NODE_GPUS) and:
#   CHAOS_DIR                _output/chaos (etcd data, audit policy, pid files
#                            of the processes the test starts)
#   CHAOS_TRAINING_ETCD_PID  the training-apiserver's etcd
#   CHAOS_TRAINING_ETCD_URL  its client URL (127.0.0.1, a free port)
#   CHAOS_AUDIT_LOG          kube-apiserver's audit log
# Extra go test flags: CHAOS_GO_TEST_FLAGS (e.g. "-run TestChaos").
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# The suite's jobs run on kwok nodes; the real node has no part in it
# (set before local.sh, which defaults it to 1).
export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
# A directory of its own, as the deploy and install tests have: make test runs it beside the e2e stack.
export LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local-chaos}"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

CHAOS_DIR="${OUTPUT_DIR}/chaos"
CHAOS_PID_DIR="${CHAOS_DIR}/pids"
etcd_pid=""

# resume_and_kill PIDFILE: SIGCONT (a frozen process ignores SIGTERM until
# resumed), then SIGKILL, the process of a pid file the test wrote, if it
# still runs our controller-manager binary.
resume_and_kill() {
  local file="$1" pid exe
  pid="$(cat "${file}" 2>/dev/null)" || return 0
  pid_alive "${pid}" || return 0
  exe="$(readlink "/proc/${pid}/exe" 2>/dev/null)" || return 0
  [[ "${exe% (deleted)}" == "${BIN_DIR}/training-controller-manager" ]] || return 0
  log "stopping ${file##*/} (pid ${pid}) left by the test"
  kill -CONT "${pid}" 2>/dev/null || true
  kill -KILL "${pid}" 2>/dev/null || true
}

# release_test_processes: whatever the test froze runs again, so that it can
# be stopped, and the controller-managers it started are killed.
release_test_processes() {
  local f pid
  for f in "${LOCAL_PID_DIR}/etcd.pid" "${LOCAL_PID_DIR}/kube-apiserver.pid" "${CHAOS_DIR}/training-etcd.pid"; do
    pid="$(cat "${f}" 2>/dev/null)" || continue
    if pid_alive "${pid}"; then
      kill -CONT "${pid}" 2>/dev/null || true
    fi
  done
  for f in "${CHAOS_PID_DIR}"/*.pid; do
    if [[ -e "${f}" ]]; then
      resume_and_kill "${f}"
    fi
  done
}

if [[ "${1:-}" == --in-stack ]]; then
  # On the stack, as localcluster run's command, with the stack's environment
  # (KUBECONFIG, LOCAL_DIR and its settings) and the variables exported below:
  # before the stack stops, the test's processes are let go.
  # shellcheck disable=SC2317 # invoked through the EXIT trap
  trap release_test_processes EXIT
  trap 'exit 130' INT TERM
  cd "${REPO_ROOT}"
  export KUBECTL="${BIN_DIR}/kubectl"
  export E2E_REPO_ROOT="${REPO_ROOT}"
  export E2E_LOCAL_DIR="${LOCAL_DIR}"
  export E2E_RESTART="${HACK_DIR}/local-restart.sh"
  export E2E_FAKE_NODES="${LOCAL_FAKE_NODES}"
  export E2E_NODE_GPUS="${LOCAL_NODE_GPUS}"

  # Word splitting of the extra flags is intended.
  # shellcheck disable=SC2086
  set -- ${CHAOS_GO_TEST_FLAGS:-}
  rc=0
  # On a whole run, first the e2e suite's test of 1,000-replica jobs of every
  # kind, alone on this stack of kwok nodes while its controller-manager still
  # runs (the chaos suite stops it): hack/test-e2e.sh leaves it out, as its
  # 5,000 pods would hold back and slow that suite's other tests.
  if [[ -z "${CHAOS_GO_TEST_FLAGS:-}" ]]; then
    log "running the e2e suite's ${WIDE_E2E_TEST} on this stack"
    go_test e2e-wide -count=1 -timeout 15m -run "${WIDE_E2E_TEST}" ./test/e2e/ || rc=$?
    log "go test exited with ${rc}"
    ((rc == 0)) || exit "${rc}"
  fi
  log "running go test ./test/chaos/ -v -count=1 -timeout 15m $*"
  go_test chaos ./test/chaos/ -v -count=1 -timeout 15m "$@" || rc=$?
  log "go test exited with ${rc}"
  exit "${rc}"
fi

refuse_running_stack
# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
  local rc=$?
  trap '' INT TERM
  # The stack is stopped; what the test left of its own goes too.
  release_test_processes
  if [[ -n "${etcd_pid}" ]] && pid_alive "${etcd_pid}"; then
    log "stopping the training-apiserver's etcd (pid ${etcd_pid})"
    stop_pid "training-etcd" "${etcd_pid}" 10
  fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "${CHAOS_DIR}"
mkdir -p "${CHAOS_DIR}" "${CHAOS_PID_DIR}"

# The training-apiserver's own etcd: a separate process on two free loopback
# ports, so that the suite can freeze it (the embedded one lives inside the
# apiserver's process). --etcd-servers given, the apiserver starts no
# embedded etcd, whatever --embedded-etcd-dir says.
port=23890
while port_in_use "${port}" || port_in_use "$((port + 1))"; do
  port=$((port + 2))
  ((port < 24000)) || die "no two free ports in 23890-24000 for the training-apiserver's etcd"
done
CHAOS_TRAINING_ETCD_URL="http://127.0.0.1:${port}"
log "starting the training-apiserver's etcd on ${CHAOS_TRAINING_ETCD_URL}"
setsid "${BIN_DIR}/etcd" \
  --name=training \
  --data-dir="${CHAOS_DIR}/training-etcd" \
  --listen-client-urls="${CHAOS_TRAINING_ETCD_URL}" \
  --advertise-client-urls="${CHAOS_TRAINING_ETCD_URL}" \
  --listen-peer-urls="http://127.0.0.1:$((port + 1))" \
  --initial-advertise-peer-urls="http://127.0.0.1:$((port + 1))" \
  --initial-cluster="training=http://127.0.0.1:$((port + 1))" \
  --unsafe-no-fsync=true \
  --log-level=warn \
  </dev/null >"${CHAOS_DIR}/training-etcd.log" 2>&1 &
etcd_pid=$!
echo "${etcd_pid}" >"${CHAOS_DIR}/training-etcd.pid"
wait_until "" "the training-apiserver's etcd" "${LOCAL_TIMEOUT}" \
  curl -fsS --max-time 5 "${CHAOS_TRAINING_ETCD_URL}/health"

# The audit log tells which controller-manager wrote what: the suite's own
# controller-managers act as users of their own (impersonation).
cat >"${CHAOS_DIR}/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  namespaces: ["chaos"]
  resources:
  - group: ""
    resources: ["pods"]
  - group: "batch.tensorstack.dev"
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  namespaces: ["${TRAINING_NAMESPACE}"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
EOF
CHAOS_AUDIT_LOG="${LOCAL_LOG_DIR}/kube-apiserver-audit.log"
export LOCAL_APISERVER_EXTRA_ARGS="--audit-policy-file=${CHAOS_DIR}/audit-policy.yaml --audit-log-path=${CHAOS_AUDIT_LOG} --audit-log-format=json ${LOCAL_APISERVER_EXTRA_ARGS:-}"
export LOCAL_TRAINING_APISERVER_EXTRA_ARGS="--etcd-servers=${CHAOS_TRAINING_ETCD_URL} ${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:-}"
export CHAOS_DIR CHAOS_TRAINING_ETCD_URL CHAOS_AUDIT_LOG
export CHAOS_TRAINING_ETCD_PID="${etcd_pid}"
require_stack_packages
localcluster run -- "${HACK_DIR}/test-chaos.sh" --in-stack
