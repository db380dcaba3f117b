#!/usr/bin/env bash
# Kueue's MultiKueue on the local stack (LOCAL_MULTIKUEUE=1; hack/test-e2e.sh
# turns it on): a second stack beside this one is the worker cluster. It is a
# stack like any other (its own etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, Kueue, kwok nodes, and our apiserver and controller behind
# its own APIService), in LOCAL_DIR-worker, on ports MULTIKUEUE_PORT_OFFSET
# above this stack's, with no real node and no second scheduler. This stack's
# Kueue dispatches to it: its configuration lists our kinds in
# multiKueue.externalFrameworks (hack/local/kueue/kueue-config.yaml), and
# hack/local/multikueue/manager.yaml adds the MultiKueueCluster, the
# AdmissionCheck, the ClusterQueue multikueue-cluster-queue and the LocalQueue
# default/multikueue-queue; the worker gets a LocalQueue of that name
# (hack/local/multikueue/worker.yaml). The worker stops with this stack.
#
# Sourced by hack/lib/local.sh.

: "${LOCAL_MULTIKUEUE:=0}"

MULTIKUEUE_PORT_OFFSET=100
MULTIKUEUE_WORKER_DIR="${LOCAL_DIR}-worker"
MULTIKUEUE_WORKER_SECRET="multikueue-worker"
# The settings that hold a port: each is moved up by MULTIKUEUE_PORT_OFFSET.
MULTIKUEUE_PORT_SETTINGS=(
  LOCAL_ETCD_PORT LOCAL_ETCD_PEER_PORT LOCAL_APISERVER_PORT LOCAL_KCM_PORT LOCAL_SCHEDULER_PORT
  LOCAL_SCHEDULER_PLUGINS_PORT LOCAL_KWOK_PORT LOCAL_TRAINING_PORT LOCAL_TRAINING_METRICS_PORT
  LOCAL_TRAINING_HEALTH_PORT LOCAL_KUEUE_WEBHOOK_PORT LOCAL_KUEUE_METRICS_PORT LOCAL_KUEUE_HEALTH_PORT
  LOCAL_REGISTRY_PORT
)

multikueue_enabled() {
  [[ "${LOCAL_MULTIKUEUE}" == 1 ]] && kueue_enabled && training_enabled
}

# multikueue_worker_env prints the environment of the worker stack's
# hack/local-up.sh, NAME=VALUE words for env(1). The extra arguments of this
# stack (service-account identities, audit logs) are this stack's alone.
multikueue_worker_env() {
  local name
  echo "LOCAL_DIR=${MULTIKUEUE_WORKER_DIR}"
  for name in "${MULTIKUEUE_PORT_SETTINGS[@]}"; do
    echo "${name}=$((${!name} + MULTIKUEUE_PORT_OFFSET))"
  done
  echo "LOCAL_MULTIKUEUE=0 LOCAL_REAL_NODE=0 LOCAL_REAL_NODE_RUNNING=0 LOCAL_SCHEDULER_PLUGINS=0 LOCAL_FAKE_NODES=4"
  echo "LOCAL_KUEUE_PODS_READY_TIMEOUT=${LOCAL_KUEUE_PODS_READY_TIMEOUT} LOCAL_KUEUE_V1BETA1=${LOCAL_KUEUE_V1BETA1}"
  echo "LOCAL_APISERVER_EXTRA_ARGS= LOCAL_TRAINING_APISERVER_EXTRA_ARGS= LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="
}

# kubectl_worker runs kubectl against the worker stack.
kubectl_worker() {
  "${BIN_DIR}/kubectl" --kubeconfig="${MULTIKUEUE_WORKER_DIR}/kubeconfig" \
    --cache-dir="${MULTIKUEUE_WORKER_DIR}/kubectl-cache" "$@"
}

# multikueue_worker_up starts the worker stack and connects this stack's
# Kueue to it.
multikueue_worker_up() {
  local worker_env
  mapfile -t worker_env < <(multikueue_worker_env | tr ' ' '\n')
  log "starting the MultiKueue worker: a second stack in ${MULTIKUEUE_WORKER_DIR#"${REPO_ROOT}/"} (ports +${MULTIKUEUE_PORT_OFFSET}; log: ${LOCAL_LOG_DIR#"${REPO_ROOT}/"}/multikueue-worker.log)"
  mkdir -p "${LOCAL_LOG_DIR}"
  env -u KUBECONFIG "${worker_env[@]}" "${REPO_ROOT}/hack/local-up.sh" >"${LOCAL_LOG_DIR}/multikueue-worker.log" 2>&1 || {
    tail -n 20 "${LOCAL_LOG_DIR}/multikueue-worker.log" >&2
    die "the MultiKueue worker stack did not start (log: ${LOCAL_LOG_DIR}/multikueue-worker.log)"
  }
  kubectl_worker apply -f "${LOCAL_HACK_DIR}/multikueue/worker.yaml" >/dev/null
  log "connecting Kueue to the worker: Secret ${KUEUE_NAMESPACE}/${MULTIKUEUE_WORKER_SECRET}, MultiKueueCluster worker, AdmissionCheck multikueue, LocalQueue default/multikueue-queue"
  # The worker's kubeconfig carries its certificates inline, as MultiKueue
  # requires.
  kubectl_local -n "${KUEUE_NAMESPACE}" create secret generic "${MULTIKUEUE_WORKER_SECRET}" \
    --from-file=kubeconfig="${MULTIKUEUE_WORKER_DIR}/kubeconfig" --dry-run=client -o yaml |
    kubectl_local apply -f - >/dev/null
  kubectl_local apply -f "${LOCAL_CONFIG_DIR}/multikueue-manager.yaml" >/dev/null
  wait_until kueue "MultiKueueCluster worker Active and ClusterQueue multikueue-cluster-queue Active" \
    "${LOCAL_TIMEOUT}" multikueue_active
}

multikueue_active() {
  [[ "$(kubectl_local get multikueuecluster worker \
    -o jsonpath='{.status.conditions[?(@.type=="Active")].status}' 2>/dev/null)" == True ]] &&
    [[ "$(kubectl_local get clusterqueue multikueue-cluster-queue \
      -o jsonpath='{.status.conditions[?(@.type=="Active")].status}' 2>/dev/null)" == True ]]
}

# multikueue_worker_down stops the worker stack, if one runs beside this one.
multikueue_worker_down() {
  [[ -d "${MULTIKUEUE_WORKER_DIR}/pids" ]] || return 0
  [[ -n "$(ls -A "${MULTIKUEUE_WORKER_DIR}/pids" 2>/dev/null)" ]] || return 0
  log "stopping the MultiKueue worker stack (${MULTIKUEUE_WORKER_DIR#"${REPO_ROOT}/"})"
  env -u KUBECONFIG LOCAL_DIR="${MULTIKUEUE_WORKER_DIR}" "${REPO_ROOT}/hack/local-down.sh" >>"${LOCAL_LOG_DIR}/multikueue-worker.log" 2>&1 ||
    log "WARNING: stopping the MultiKueue worker failed (log: ${LOCAL_LOG_DIR}/multikueue-worker.log)"
}
