#!/usr/bin/env bash
# The benchmarks' peer controllers, started on the local stack for one of
# their kinds and stopped again: Kubeflow's training-operator (TFJob,
# PyTorchJob) and JobSet (JobSet). Shared by hack/bench-controller.sh
# (training-operator) and hack/bench-wide.sh (either). Source it after
# hack/lib/common.sh, hack/lib/local.sh and hack/lib/bench.sh.
#
# A peer runs in a network namespace of its own: training-operator's webhook
# server binds every address (no flag narrows it), JobSet's too unless given
# a config file, and the rule here is that nothing listens on the host but
# 127.0.0.1; one way for both also keeps their fixed ports (9443, 8081) off
# the host. The forwarder (test/bench/forward) joins the two loopbacks:
# inside the namespace it listens on kube-apiserver's port and connects to
# kube-apiserver on the host; on the host it listens on a free port of
# 127.0.0.1, which kube-apiserver's webhook calls reach (an ExternalName
# Service, as for our APIService), and connects to the peer's webhook port
# inside the namespace.
# shellcheck disable=SC2034

PEER_FORWARD_BIN="${BENCH_BIN_DIR}/forward"
# The peers' fixed certificate directory (their cert rotators wait for the
# files there).
PEER_CERT_DIR="/tmp/k8s-webhook-server/serving-certs"
PEER_LOG="${BENCH_DIR}/training-operator.log"
PEER_FORWARD_LOG="${BENCH_DIR}/forward.log"

# BENCH_PEERS: BENCH_PEER split at its commas.
BENCH_PEERS=()
peer_name=""
peer_netns=""
peer_forward_pid=""
PEER_PID=""
peer_certs_created=0
# The peer's webhook configurations, deleted when it stops: the next peer's
# forwarder may take the same host port.
peer_webhooks=()

# peer_setting ALLOWED...: checks BENCH_PEER, a comma-separated list of the
# ALLOWED peers, or empty or none for no peer (then empty); sets BENCH_PEERS.
peer_setting() {
  local allowed=" $* " p
  BENCH_PEERS=()
  case "${BENCH_PEER:-}" in
    "" | none) BENCH_PEER="" ;;
    *) IFS=, read -r -a BENCH_PEERS <<<"${BENCH_PEER}" ;;
  esac
  for p in "${BENCH_PEERS[@]}"; do
    [[ -n "${p}" && "${allowed}" == *" ${p} "* ]] || die "BENCH_PEER=${BENCH_PEER}: the peers here are $*"
  done
}

# peer_kind KIND sets what differs between the peers' kinds: the peer, its
# binary and log, the resource and, for Kubeflow's, the scheme it enables,
# the replica specs' key, a replica type and its container name (for the
# webhook check).
peer_kind() {
  case "$1" in
    TFJob) peer_name=training-operator peer_scheme=tfjob peer_resource=tfjobs peer_specs=tfReplicaSpecs peer_replica=Worker peer_container=tensorflow ;;
    PyTorchJob) peer_name=training-operator peer_scheme=pytorchjob peer_resource=pytorchjobs peer_specs=pytorchReplicaSpecs peer_replica=Master peer_container=pytorch ;;
    JobSet) peer_name=jobset peer_resource=jobsets ;;
    *) die "peer kind $1: TFJob, PyTorchJob or JobSet" ;;
  esac
  case "${peer_name}" in
    training-operator) PEER_BIN="${TRAINING_OPERATOR_BIN}" peer_secret_ns=kubeflow peer_secret=training-operator-webhook-cert ;;
    jobset) PEER_BIN="${JOBSET_BIN}" peer_secret_ns=jobset-system peer_secret=jobset-webhook-server-cert ;;
  esac
  peer_kind_name="$1"
  PEER_LOG="${BENCH_DIR}/${peer_name}.log"
}

# peer_prepare KIND: checks the host, builds the peer and the forwarder and
# fetches its CRD, before the stack starts (the builds compete for the CPUs).
peer_prepare() {
  peer_kind "$1"
  [[ "$(id -u)" == 0 ]] || die "the ${peer_name} peer needs root (ip netns add)"
  command -v ip >/dev/null 2>&1 || die "the ${peer_name} peer needs ip (iproute2)"
  case "${peer_name}" in
    training-operator)
      build_training_operator
      kubeflow_crd "${peer_resource}" >/dev/null
      ;;
    jobset)
      build_jobset
      jobset_crd >/dev/null
      ;;
  esac
  # Once, whichever peers run.
  if [[ -z "${peer_forward_built:-}" ]]; then
    bench_build forward ./test/bench/forward
    peer_forward_built=1
  fi
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
  stop_bench_pid "${peer_name:-peer}" "${PEER_PID}"
  stop_bench_pid forwarder "${peer_forward_pid}"
  PEER_PID="" peer_forward_pid=""
  if ((${#peer_webhooks[@]})); then
    kubectl_local delete --ignore-not-found --request-timeout=10s "${peer_webhooks[@]}" >/dev/null 2>&1 ||
      log "WARNING: could not delete ${peer_webhooks[*]}"
    peer_webhooks=()
  fi
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
  [[ -n "$(kubectl_local -n "${peer_secret_ns}" get secret "${peer_secret}" -o jsonpath='{.data.tls\.crt}' 2>/dev/null)" ]]
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
    kubectl_local -n "${peer_secret_ns}" get secret "${peer_secret}" -o "jsonpath={.data.${key//./\\.}}" |
      base64 -d >"${PEER_CERT_DIR}/${key}.tmp"
    mv -f "${PEER_CERT_DIR}/${key}.tmp" "${PEER_CERT_DIR}/${key}"
  done
}

peer_ready() {
  ip netns exec "${peer_netns}" curl -fsS --max-time 5 -o /dev/null http://127.0.0.1:8081/readyz
}

# peer_webhook_answers: a dry-run create of the peer's kind goes through
# kube-apiserver's call of the peer's webhooks.
peer_webhook_answers() {
  if [[ "${peer_name}" == jobset ]]; then
    kubectl_local create --dry-run=server -o name -f - <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: bench-webhook-check
  namespace: default
spec:
  replicatedJobs:
  - name: check
    replicas: 1
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: check
              image: docker.io/library/busybox:1.36
EOF
    return
  fi
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

# peer_install_training_operator WEBHOOK_PORT: what training-operator's
# manifests install, minus its Deployment and RBAC (it runs as the admin):
# the namespace, the empty Secret its cert rotator fills, the webhook's
# Service and the kind's entry of its ValidatingWebhookConfiguration.
peer_install_training_operator() {
  local webhook_port="$1"
  install_kubeflow_crd "${peer_resource}"
  peer_webhooks=(validatingwebhookconfiguration/validator.training-operator.kubeflow.org)
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
}

# peer_install_jobset WEBHOOK_PORT: what JobSet's manifests install (its
# config/components: crd, internalcert, webhook with its patches), minus its
# Deployment and RBAC: the CRD, the namespace its cert management assumes
# outside a pod, the empty Secret its rotator fills, the webhook's Service,
# and both webhook configurations under the names the rotator writes the CA
# into. Its pod webhooks see only pods labelled with a JobSet's name, so
# every pod of the benchmark's JobSet goes through both, as it would
# deployed.
peer_install_jobset() {
  local webhook_port="$1"
  log "installing JobSet's CRD (${JOBSET_MODULE}@${JOBSET_VERSION})"
  install_crd "$(jobset_crd)" jobsets.jobset.x-k8s.io
  peer_webhooks=(mutatingwebhookconfiguration/jobset-mutating-webhook-configuration
    validatingwebhookconfiguration/jobset-validating-webhook-configuration)
  local service="
    service:
      name: jobset-webhook-service
      namespace: jobset-system
      port: ${webhook_port}"
  local jobsets="
  - apiGroups: [jobset.x-k8s.io]
    apiVersions: [v1alpha2]
    resources: [jobsets]"
  local pods="
  - apiGroups: [\"\"]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pods]
  objectSelector:
    matchExpressions:
    - key: jobset.sigs.k8s.io/jobset-name
      operator: Exists"
  kubectl_local apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: jobset-system
---
apiVersion: v1
kind: Secret
metadata:
  name: jobset-webhook-server-cert
  namespace: jobset-system
---
apiVersion: v1
kind: Service
metadata:
  name: jobset-webhook-service
  namespace: jobset-system
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - port: ${webhook_port}
    protocol: TCP
    targetPort: ${webhook_port}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: jobset-mutating-webhook-configuration
webhooks:
- name: mjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig:${service}
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
  failurePolicy: Fail
  sideEffects: None
  rules:${jobsets}
    operations: [CREATE]
- name: mpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig:${service}
      path: /mutate--v1-pod
  failurePolicy: Fail
  sideEffects: None
  rules:${pods}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: jobset-validating-webhook-configuration
webhooks:
- name: vjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig:${service}
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
  failurePolicy: Fail
  sideEffects: None
  rules:${jobsets}
    operations: [CREATE, UPDATE]
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig:${service}
      path: /validate--v1-pod
  failurePolicy: Fail
  sideEffects: None
  rules:${pods}
EOF
}

# peer_start KIND FLAGS...: installs the kind's CRD and the peer's webhooks
# and starts the peer for it with FLAGS (its tuning) in a network namespace
# of its own; sets PEER_PID once its webhook answers.
peer_start() {
  peer_kind "$1"
  shift

  peer_netns="bench-peer-$$"
  local webhook_port
  webhook_port="$(free_port 16270)"
  log "network namespace ${peer_netns} for ${peer_name}; its webhook reached on 127.0.0.1:${webhook_port}"
  ip netns add "${peer_netns}"
  ip netns exec "${peer_netns}" ip link set lo up
  setsid "${PEER_FORWARD_BIN}" -netns "${peer_netns}" \
    -into "127.0.0.1:${LOCAL_APISERVER_PORT}" \
    -out "127.0.0.1:${webhook_port}=127.0.0.1:9443" \
    </dev/null >"${PEER_FORWARD_LOG}" 2>&1 &
  peer_forward_pid=$!

  "peer_install_${peer_name//-/_}" "${webhook_port}"

  local flags=(--kubeconfig="${LOCAL_KUBECONFIG}" --health-probe-bind-address=127.0.0.1:8081 --zap-log-level=info)
  case "${peer_name}" in
    training-operator)
      flags+=(--enable-scheme="${peer_scheme}" --metrics-bind-address=127.0.0.1:8080 --webhook-server-port=9443)
      ;;
    jobset)
      # Its webhook port is 9443 by default; one replica needs no election.
      flags+=(--metrics-bind-address=127.0.0.1:8443 --leader-elect=false)
      ;;
  esac
  setsid ip netns exec "${peer_netns}" "${PEER_BIN}" "${flags[@]}" "$@" \
    </dev/null >"${PEER_LOG}" 2>&1 &
  PEER_PID=$!
  log "started ${peer_name} for ${peer_kind_name} (pid ${PEER_PID}, log ${PEER_LOG#"${REPO_ROOT}/"})"
  wait_until "" "${peer_name}'s certificate in ${peer_secret_ns}/${peer_secret}" "${LOCAL_TIMEOUT}" peer_secret_filled
  peer_copy_certs
  wait_until "" "${peer_name} /readyz" "${LOCAL_TIMEOUT}" peer_ready
  wait_until "" "${peer_name}'s webhook (a dry-run ${peer_kind_name} through kube-apiserver)" "${LOCAL_TIMEOUT}" peer_webhook_answers
  [[ "$(readlink "/proc/${PEER_PID}/exe")" == "${PEER_BIN}" ]] ||
    die "pid ${PEER_PID} is not ${peer_name}; cannot measure it"
}
