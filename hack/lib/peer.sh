#!/usr/bin/env bash
# The benchmarks' peer controller, Kubeflow's training-operator, started on
# the local stack for one of its kinds (TFJob or PyTorchJob) and stopped
# again. Shared by hack/bench-controller.sh and hack/bench-wide.sh. Source it
# after hack/lib/common.sh, hack/lib/local.sh and hack/lib/bench.sh.
#
# The peer runs in a network namespace of its own: its webhook server binds
# every address (no flag narrows it) and the rule here is that nothing
# listens on the host but 127.0.0.1. The forwarder (test/bench/forward)
# joins the two loopbacks: inside the namespace it listens on kube-apiserver's
# port and connects to kube-apiserver on the host; on the host it listens on a
# free port of 127.0.0.1, which kube-apiserver's webhook calls reach (an
# ExternalName Service, as for our APIService), and connects to the peer's
# webhook port inside the namespace.
# shellcheck disable=SC2034

PEER_FORWARD_BIN="${BENCH_BIN_DIR}/forward"
# The peer's fixed certificate directory (its cert rotator waits for the files there).
PEER_CERT_DIR="/tmp/k8s-webhook-server/serving-certs"
PEER_LOG="${BENCH_DIR}/training-operator.log"
PEER_FORWARD_LOG="${BENCH_DIR}/forward.log"

peer_netns=""
peer_forward_pid=""
PEER_PID=""
peer_certs_created=0

# peer_setting checks BENCH_PEER: empty or none for no peer (then empty),
# or training-operator.
peer_setting() {
  case "${BENCH_PEER:-}" in
    "" | none) BENCH_PEER="" ;;
    training-operator) ;;
    *) die "BENCH_PEER=${BENCH_PEER}: the only peer is training-operator" ;;
  esac
}

# peer_kind KIND sets what differs between the peer's kinds: the scheme it
# enables, the resource, the replica specs' key, a replica type and its
# container name (for the webhook check).
peer_kind() {
  case "$1" in
    TFJob) peer_scheme=tfjob peer_resource=tfjobs peer_specs=tfReplicaSpecs peer_replica=Worker peer_container=tensorflow ;;
    PyTorchJob) peer_scheme=pytorchjob peer_resource=pytorchjobs peer_specs=pytorchReplicaSpecs peer_replica=Master peer_container=pytorch ;;
    *) die "peer kind $1: TFJob or PyTorchJob" ;;
  esac
  peer_kind_name="$1"
}

# peer_prepare KIND: checks the host, builds the peer and the forwarder and
# fetches its CRD, before the stack starts (the builds compete for the CPUs).
peer_prepare() {
  peer_kind "$1"
  [[ "$(id -u)" == 0 ]] || die "the training-operator peer needs root (ip netns add)"
  command -v ip >/dev/null 2>&1 || die "the training-operator peer needs ip (iproute2)"
  build_training_operator
  bench_build forward ./test/bench/forward
  kubeflow_crd "${peer_resource}" >/dev/null
}

# stop_bench_pid NAME PID: SIGTERM, SIGKILL after 10 s; only our own children.
stop_bench_pid() {
  local name="$1" pid="$2"
  [[ -n "${pid}" ]] || return 0
  pid_alive "${pid}" || return 0
  log "stopping ${name} (pid ${pid})"
  stop_pid "${name}" "${pid}" 10
}

# peer_stop stops what peer_start started; safe to call at any point.
peer_stop() {
  stop_bench_pid training-operator "${PEER_PID}"
  stop_bench_pid forwarder "${peer_forward_pid}"
  PEER_PID="" peer_forward_pid=""
  if [[ -n "${peer_netns}" ]]; then
    ip netns del "${peer_netns}" 2>/dev/null || log "WARNING: could not delete network namespace ${peer_netns}"
    peer_netns=""
  fi
  if ((peer_certs_created)); then
    rm -rf /tmp/k8s-webhook-server
    peer_certs_created=0
  fi
}

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
  ip netns exec "${peer_netns}" curl -fsS --max-time 5 -o /dev/null http://127.0.0.1:8081/readyz
}

# peer_webhook_answers: a dry-run create of the peer's kind goes through
# kube-apiserver's call of the peer's validating webhook.
peer_webhook_answers() {
  kubectl_local create --dry-run=server -o name -f - <<EOF
apiVersion: kubeflow.org/v1
kind: ${peer_kind_name}
metadata:
  name: bench-webhook-check
  namespace: default
spec:
  ${peer_specs}:
    ${peer_replica}:
      replicas: 1
      template:
        spec:
          containers:
          - name: ${peer_container}
            image: docker.io/library/busybox:1.36
EOF
}

# peer_start KIND FLAGS...: installs the kind's CRD and starts the peer for
# it with FLAGS (its tuning) in a network namespace of its own; sets
# PEER_PID once its webhook answers.
peer_start() {
  peer_kind "$1"
  shift
  install_kubeflow_crd "${peer_resource}"

  peer_netns="bench-peer-$$"
  local webhook_port
  webhook_port="$(free_port 16270)"
  log "network namespace ${peer_netns} for training-operator; its webhook reached on 127.0.0.1:${webhook_port}"
  ip netns add "${peer_netns}"
  ip netns exec "${peer_netns}" ip link set lo up
  setsid "${PEER_FORWARD_BIN}" -netns "${peer_netns}" \
    -into "127.0.0.1:${LOCAL_APISERVER_PORT}" \
    -out "127.0.0.1:${webhook_port}=127.0.0.1:9443" \
    </dev/null >"${PEER_FORWARD_LOG}" 2>&1 &
  peer_forward_pid=$!

  # What the peer's manifests install, minus its Deployment and RBAC (it
  # runs as the admin): the namespace, the empty Secret its cert rotator
  # fills, the webhook's Service and the kind's entry of its
  # ValidatingWebhookConfiguration.
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
      path: /validate-kubeflow-org-v1-${peer_scheme}
      port: ${webhook_port}
  failurePolicy: Fail
  name: validator.${peer_scheme}.training-operator.kubeflow.org
  rules:
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [${peer_resource}]
  sideEffects: None
EOF

  setsid ip netns exec "${peer_netns}" "${TRAINING_OPERATOR_BIN}" \
    --kubeconfig="${LOCAL_KUBECONFIG}" \
    --enable-scheme="${peer_scheme}" \
    --metrics-bind-address=127.0.0.1:8080 \
    --health-probe-bind-address=127.0.0.1:8081 \
    --webhook-server-port=9443 \
    --zap-log-level=info \
    "$@" \
    </dev/null >"${PEER_LOG}" 2>&1 &
  PEER_PID=$!
  log "started training-operator for ${peer_kind_name} (pid ${PEER_PID}, log ${PEER_LOG#"${REPO_ROOT}/"})"
  wait_until "" "training-operator's certificate in kubeflow/training-operator-webhook-cert" "${LOCAL_TIMEOUT}" peer_secret_filled
  peer_copy_certs
  wait_until "" "training-operator /readyz" "${LOCAL_TIMEOUT}" peer_ready
  wait_until "" "training-operator's webhook (a dry-run ${peer_kind_name} through kube-apiserver)" "${LOCAL_TIMEOUT}" peer_webhook_answers
  [[ "$(readlink "/proc/${PEER_PID}/exe")" == "${TRAINING_OPERATOR_BIN}" ]] ||
    die "pid ${PEER_PID} is not training-operator; cannot measure it"
}
