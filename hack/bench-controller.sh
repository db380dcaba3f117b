#!/usr/bin/env bash
# The controller benchmark (make bench-controller): starts the local control
# plane, runs BENCH_JOBS jobs of chief 1 + ps 1 + worker 3 whose pods exit 0
# after BENCH_RUN_FOR through our training-controller-manager
# (test/bench/controller), optionally the same number of Kubeflow TFJobs
# through Kubeflow's training-operator on the same stack, and always stops
# everything it started. Prints a markdown table, also saved in
# _output/bench/controller.md. How to read it: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_JOBS=500           jobs (× 5 pods)
#   BENCH_RUN_FOR=20s        how long each pod runs before it exits 0
#   BENCH_CONCURRENCY=8      creates in flight
#   BENCH_CONTROLLER_ARGS    our controller's flags (default none: the shipped defaults,
#                            no client-side limit, 10 workers)
#   BENCH_PEER=training-operator
#                            also run Kubeflow training-operator v1.9.4 (built with
#                            go install into _output/bin on first use) on the same
#                            number of TFJobs, after ours, and print both columns
#   BENCH_PEER_ARGS          its tuning flags
#                            (default --controller-threads=8 --kube-api-qps=1000 --kube-api-burst=2000)
#   LOCAL_*                  the stack's settings (hack/local-up.sh); the benchmark
#                            defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS and
#                            LOCAL_GANG_WORKLOAD to 0, and LOCAL_FAKE_NODES to enough
#                            nodes for every pod at once
#
# The peer runs in a network namespace of its own: its webhook server binds
# :9443 (all addresses) with no flag to change that. test/bench/controller's
# forward command joins the two loopbacks: inside the namespace it listens on
# 127.0.0.1:LOCAL_APISERVER_PORT and connects to kube-apiserver on the host's
# 127.0.0.1; on the host it listens on 127.0.0.1:<free port> for the webhook
# calls of kube-apiserver (through the ExternalName Service
# kubeflow/training-operator) and connects to 127.0.0.1:9443 inside the
# namespace. No listener is on any other address. Needs root (ip netns).
set -euo pipefail

: "${BENCH_JOBS:=500}"
: "${BENCH_RUN_FOR:=20s}"
: "${BENCH_CONCURRENCY:=8}"
: "${BENCH_CONTROLLER_ARGS=}"
: "${BENCH_PEER:=}"
: "${BENCH_PEER_ARGS:=--controller-threads=8 --kube-api-qps=1000 --kube-api-burst=2000}"
: "${LOCAL_KUEUE:=0}"
: "${LOCAL_SCHEDULER_PLUGINS:=0}"
: "${LOCAL_GANG_WORKLOAD:=0}"
: "${LOCAL_NODE_PODS:=500}"
: "${LOCAL_FAKE_NODES:=10}"
# Room for every pod at once.
nodes_needed=$(((BENCH_JOBS * 5 + LOCAL_NODE_PODS - 1) / LOCAL_NODE_PODS))
if ((LOCAL_FAKE_NODES < nodes_needed)); then
  LOCAL_FAKE_NODES="${nodes_needed}"
fi
LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-} ${BENCH_CONTROLLER_ARGS}"
export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_NODE_PODS LOCAL_FAKE_NODES
export LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS BENCH_JOBS BENCH_RUN_FOR BENCH_CONCURRENCY

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"

case "${BENCH_PEER}" in
  "" | none) BENCH_PEER="" ;;
  training-operator)
    [[ "$(id -u)" == 0 ]] || die "BENCH_PEER=training-operator needs root (ip netns add)"
    command -v ip >/dev/null 2>&1 || die "BENCH_PEER=training-operator needs ip (iproute2)"
    ;;
  *) die "BENCH_PEER=${BENCH_PEER}: the only peer is training-operator" ;;
esac

bench_refuse_running_stack
bench_build bench-controller ./test/bench/controller
if [[ -n "${BENCH_PEER}" ]]; then
  build_training_operator
  tfjob_crd >/dev/null
fi
BENCH="${BENCH_BIN_DIR}/bench-controller"
OURS_JSON="${BENCH_DIR}/controller-ours.json"
PEER_JSON="${BENCH_DIR}/controller-peer.json"
PEER_LOG="${BENCH_DIR}/training-operator.log"
FORWARD_LOG="${BENCH_DIR}/forward.log"
# The peer's fixed certificate directory (its cert rotator waits for the files there).
PEER_CERT_DIR="/tmp/k8s-webhook-server/serving-certs"
rm -f "${OURS_JSON}" "${PEER_JSON}"

netns=""
forward_pid=""
peer_pid=""
peer_certs_created=0
reported=0

# stop_bench_pid NAME PID: SIGTERM, SIGKILL after 10 s; only our own children.
stop_bench_pid() {
  local name="$1" pid="$2"
  [[ -n "${pid}" ]] || return 0
  pid_alive "${pid}" || return 0
  log "stopping ${name} (pid ${pid})"
  stop_pid "${name}" "${pid}" 10
}

# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
  local rc=$?
  trap '' INT TERM
  if ((rc != 0 && reported == 0)) && [[ -f "${OURS_JSON}" ]]; then
    log "the run failed after ours had finished; ours alone:"
    "${BENCH}" report -out "${BENCH_DIR}/controller.md" \
      -peer-note "No peer column: the ${BENCH_PEER:-peer} run failed (see ${PEER_LOG#"${REPO_ROOT}/"} and the lines above)." \
      "${OURS_JSON}" || true
  fi
  stop_bench_pid training-operator "${peer_pid}"
  stop_bench_pid forwarder "${forward_pid}"
  if [[ -n "${netns}" ]]; then
    ip netns del "${netns}" 2>/dev/null || log "WARNING: could not delete network namespace ${netns}"
  fi
  if ((peer_certs_created)); then
    rm -rf /tmp/k8s-webhook-server
  fi
  log "stopping the local control plane"
  "${HACK_DIR}/local-down.sh" || log "WARNING: hack/local-down.sh failed"
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${HACK_DIR}/local-up.sh"
load_settings

"${BENCH}" run -kind ours -local-dir "${LOCAL_DIR}" -controller-flags "${BENCH_CONTROLLER_ARGS}" -out "${OURS_JSON}"

peer_secret_filled() {
  [[ -n "$(kubectl_local -n kubeflow get secret training-operator-webhook-cert -o jsonpath='{.data.tls\.crt}' 2>/dev/null)" ]]
}

# peer_copy_certs: what a kubelet does with the mounted Secret in a pod.
peer_copy_certs() {
  local key
  if [[ ! -d /tmp/k8s-webhook-server ]]; then
    peer_certs_created=1
  fi
  mkdir -p "${PEER_CERT_DIR}"
  chmod 700 /tmp/k8s-webhook-server "${PEER_CERT_DIR}"
  # The key first: the rotator waits for tls.crt.
  for key in tls.key ca.crt tls.crt; do
    kubectl_local -n kubeflow get secret training-operator-webhook-cert -o "jsonpath={.data.${key//./\\.}}" |
      base64 -d >"${PEER_CERT_DIR}/${key}.tmp"
    mv -f "${PEER_CERT_DIR}/${key}.tmp" "${PEER_CERT_DIR}/${key}"
  done
}

peer_ready() {
  ip netns exec "${netns}" curl -fsS --max-time 5 -o /dev/null http://127.0.0.1:8081/readyz
}

# peer_webhook_answers: a dry-run TFJob create goes through kube-apiserver's
# call of the peer's validating webhook.
peer_webhook_answers() {
  kubectl_local create --dry-run=server -o name -f - <<EOF
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: bench-webhook-check
  namespace: default
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: tensorflow
            image: docker.io/library/busybox:1.36
EOF
}

if [[ -n "${BENCH_PEER}" ]]; then
  # Ours is done and its namespace gone; the peer gets the stack alone, and
  # a kube-apiserver started afresh, as ours had: its peak memory then
  # does not carry what ours left in its caches.
  "${HACK_DIR}/local-restart.sh" --stop training-controller-manager
  "${HACK_DIR}/local-restart.sh" kube-apiserver
  wait_until "" "APIService ${TRAINING_APISERVICE} Available" "${LOCAL_TIMEOUT}" apiservice_available
  install_tfjob_crd

  netns="bench-peer-$$"
  webhook_port="$(free_port 16270)"
  log "network namespace ${netns} for training-operator; its webhook reached on 127.0.0.1:${webhook_port}"
  ip netns add "${netns}"
  ip netns exec "${netns}" ip link set lo up
  setsid "${BENCH}" forward -netns "${netns}" \
    -into "127.0.0.1:${LOCAL_APISERVER_PORT}" \
    -out "127.0.0.1:${webhook_port}=127.0.0.1:9443" \
    </dev/null >"${FORWARD_LOG}" 2>&1 &
  forward_pid=$!

  # What the peer's manifests install, minus its Deployment and RBAC (it
  # runs as the admin): the namespace, the empty Secret its cert rotator
  # fills, the webhook's Service (ExternalName, as for our APIService) and
  # the TFJob entry of its ValidatingWebhookConfiguration.
  kubectl_local apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: kubeflow
---
apiVersion: v1
kind: Secret
metadata:
  name: training-operator-webhook-cert
  namespace: kubeflow
---
apiVersion: v1
kind: Service
metadata:
  name: training-operator
  namespace: kubeflow
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - name: webhook-server
    port: ${webhook_port}
    protocol: TCP
    targetPort: ${webhook_port}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validator.training-operator.kubeflow.org
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: training-operator
      namespace: kubeflow
      path: /validate-kubeflow-org-v1-tfjob
      port: ${webhook_port}
  failurePolicy: Fail
  name: validator.tfjob.training-operator.kubeflow.org
  rules:
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [tfjobs]
  sideEffects: None
EOF

  # Word splitting of the flags is intended.
  # shellcheck disable=SC2086
  setsid ip netns exec "${netns}" "${TRAINING_OPERATOR_BIN}" \
    --kubeconfig="${LOCAL_KUBECONFIG}" \
    --enable-scheme=tfjob \
    --metrics-bind-address=127.0.0.1:8080 \
    --health-probe-bind-address=127.0.0.1:8081 \
    --webhook-server-port=9443 \
    --zap-log-level=info \
    ${BENCH_PEER_ARGS} \
    </dev/null >"${PEER_LOG}" 2>&1 &
  peer_pid=$!
  log "started training-operator (pid ${peer_pid}, log ${PEER_LOG#"${REPO_ROOT}/"})"
  wait_until "" "training-operator's certificate in kubeflow/training-operator-webhook-cert" "${LOCAL_TIMEOUT}" peer_secret_filled
  peer_copy_certs
  wait_until "" "training-operator /readyz" "${LOCAL_TIMEOUT}" peer_ready
  wait_until "" "training-operator's webhook (a dry-run TFJob through kube-apiserver)" "${LOCAL_TIMEOUT}" peer_webhook_answers
  [[ "$(readlink "/proc/${peer_pid}/exe")" == "${TRAINING_OPERATOR_BIN}" ]] ||
    die "pid ${peer_pid} is not training-operator; cannot measure it"

  "${BENCH}" run -kind training-operator -local-dir "${LOCAL_DIR}" -controller-pid "${peer_pid}" \
    -controller-flags "${BENCH_PEER_ARGS}" -out "${PEER_JSON}"
  "${BENCH}" report -out "${BENCH_DIR}/controller.md" "${OURS_JSON}" "${PEER_JSON}"
else
  "${BENCH}" report -out "${BENCH_DIR}/controller.md" \
    -peer-note "No peer column: run with BENCH_PEER=training-operator for Kubeflow's training-operator v1.9.4 on the same jobs." \
    "${OURS_JSON}"
fi
reported=1
log "table saved in ${BENCH_DIR#"${REPO_ROOT}/"}/controller.md"
