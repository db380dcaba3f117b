#!/usr/bin/env bash
# Starts a complete control plane on 127.0.0.1 from the binaries in _output/bin:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a second
#   scheduler (scheduler-plugins, coscheduling), Kueue (job queueing and quota),
#   kwok with fake GPU nodes, and TensorStack's training-apiserver (registered
#   as the aggregated API batch.tensorstack.dev/v1beta1) and
#   training-controller-manager.
#
# Usage: hack/local-up.sh [--foreground]
#   without --foreground  start everything in the background and return once all
#                         of it is ready; stop it with hack/local-down.sh
#   --foreground          start everything, then wait; Ctrl-C (or SIGTERM) stops
#                         it all in reverse order and exits 0
#
# State, logs and the admin kubeconfig are under _output/local (wiped at each
# start). Settings (environment, defaults in hack/lib/local.sh):
#   LOCAL_ETCD_PORT=23790 LOCAL_ETCD_PEER_PORT=23791 LOCAL_APISERVER_PORT=16443
#   LOCAL_KCM_PORT=16257 LOCAL_SCHEDULER_PORT=16259 LOCAL_SCHEDULER_PLUGINS_PORT=16261
#   LOCAL_KWOK_PORT=16247 LOCAL_KUEUE_WEBHOOK_PORT=16263 LOCAL_KUEUE_METRICS_PORT=16264
#   LOCAL_KUEUE_HEALTH_PORT=16265
#   LOCAL_TRAINING_PORT=18443 LOCAL_TRAINING_METRICS_PORT=18080 LOCAL_TRAINING_HEALTH_PORT=18081
#   LOCAL_FAKE_NODES=10 LOCAL_NODE_CPU=1000 LOCAL_NODE_MEMORY=4Ti LOCAL_NODE_PODS=500 LOCAL_NODE_GPUS=64
#   LOCAL_SKIP_TRAINING=1     do not start training-apiserver / training-controller-manager
#   LOCAL_REAL_NODE=0         no real node: without it, where the machine allows, a real node
#                             (containerd, runc, a kubelet in a network namespace of its own,
#                             hack/lib/node.sh) runs the pods whose images are all the stack's
#                             own, with the registry and local-path-provisioner (the default
#                             StorageClass) beside it; otherwise kwok nodes only
#   LOCAL_TRAINING_METRICS_SECURE=0  the controller's metrics over plain HTTP without authentication
#                             (default 1: HTTPS, a token authorized for /metrics)
#   LOCAL_GANG_WORKLOAD=0     no Workload API: without it kube-apiserver, kube-controller-manager
#                             and kube-scheduler run with --feature-gates=GenericWorkload=true
#                             (and kube-apiserver --runtime-config=scheduling.k8s.io/v1beta1=true):
#                             Workload and PodGroup of scheduling.k8s.io/v1beta1 are served and
#                             kube-scheduler gang-schedules pods with spec.schedulingGroup
#   LOCAL_SCHEDULER_PLUGINS=0 no second scheduler: without it scheduler-plugins' coscheduling
#                             runs as schedulerName scheduler-plugins-scheduler, with the
#                             PodGroup CRD scheduling.x-k8s.io/v1alpha1 installed (pods join a
#                             group with the label scheduling.x-k8s.io/pod-group=<name>);
#                             hack/build-test-binaries.sh then skips its build too
#   LOCAL_KUEUE=0             no Kueue: without it Kueue v0.19.2 runs (component kueue) with
#                             its CRDs kueue.x-k8s.io, its webhooks for Kueue's kinds and
#                             batch/v1 Jobs, TensorFlowTrainingJob and PyTorchTrainingJob as
#                             external frameworks, and the queues of hack/local/kueue/queues.yaml
#                             (ClusterQueue cluster-queue for all namespaces, LocalQueue
#                             default/user-queue); hack/build-test-binaries.sh then skips its build
#   LOCAL_KUEUE_GPU_QUOTA=8   nvidia.com/gpu nominal quota of ClusterQueue cluster-queue
#   LOCAL_KUEUE_PODS_READY_TIMEOUT=30m   Kueue's waitForPodsReady timeout (on, as in
#                             Kueue v0.19's default configuration)
#   LOCAL_KUEUE_V1BETA1=1     0 marks kueue.x-k8s.io/v1beta1 unserved, as Kueue v0.20 does
#   LOCAL_TIMEOUT=120         seconds to wait for each component
#   LOCAL_APISERVER_EXTRA_ARGS, LOCAL_TRAINING_APISERVER_EXTRA_ARGS,
#   LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS   extra flags (space separated)
#   LOCAL_TRAINING_APISERVER_ENV  the training-apiserver's extra environment,
#                             NAME=VALUE words, e.g. "GOGC=100 GOMEMLIMIT=512MiB"
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/pki.sh
source "${HACK_DIR}/lib/pki.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# Keep the original stderr on fd 3: a signal can arrive while a function runs
# with its output redirected to /dev/null, and the trap runs in that context.
exec 3>&2
restore_output() {
  exec 1>&3 2>&3
}

foreground=0
for arg in "$@"; do
  case "${arg}" in
    --foreground) foreground=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die "unknown argument ${arg} (usage: $0 [--foreground])" ;;
  esac
done

# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"
# openssl makes the stack's certificates; curl checks the components' health.
require_packages "the local control plane" curl:curl openssl:openssl
for tool in setsid find; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is needed on PATH"
done

# Binaries.
missing=()
for c in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
  [[ -x "${BIN_DIR}/${c}" ]] || missing+=("${c}")
done
if ((${#missing[@]})); then
  die "missing in ${BIN_DIR#"${REPO_ROOT}/"}: ${missing[*]}; run hack/build-test-binaries.sh (make test-binaries)"
fi
if scheduler_plugins_enabled && [[ ! -x "$(component_binary scheduler-plugins)" ]]; then
  die "$(component_binary scheduler-plugins) not found; run hack/build-test-binaries.sh (make test-binaries), or start without it: LOCAL_SCHEDULER_PLUGINS=0 $0"
fi
if kueue_enabled && [[ ! -x "$(component_binary kueue)" ]]; then
  die "$(component_binary kueue) not found; run hack/build-test-binaries.sh (make test-binaries), or start without it: LOCAL_KUEUE=0 $0"
fi
if training_enabled; then
  for c in training-apiserver training-controller-manager; do
    [[ -x "${BIN_DIR}/${c}" ]] ||
      die "${BIN_DIR#"${REPO_ROOT}/"}/${c} not found; run 'make build', or start without it: LOCAL_SKIP_TRAINING=1 $0"
  done
fi

# Already running?
running="$(running_components | tr '\n' ' ')"
if [[ -n "${running// /}" ]]; then
  die "a local control plane is already running (${running% }); stop it first with hack/local-down.sh (make local-down)"
fi

# The real node runs where the machine allows it and its parts are built;
# otherwise the stack is kwok-only, as the one line below says.
LOCAL_REAL_NODE_RUNNING=0
if real_node_enabled; then
  if why="$(node_cannot_run)"; then
    log "no real node: ${why}; starting with kwok nodes only (LOCAL_REAL_NODE=0 says so quietly)"
  elif missing="$(node_binaries_missing | tr '\n' ' ')" && [[ -n "${missing// /}" ]]; then
    log "no real node: not built (${missing% }); run hack/build-node-binaries.sh (make node); starting with kwok nodes only"
  else
    LOCAL_REAL_NODE_RUNNING=1
    # kube-proxy programs iptables and clears conntrack entries.
    require_packages "the real node" iptables:iptables conntrack:conntrack
  fi
fi

mapfile -t components < <(active_components)
check_ports_free "${components[@]}"

start_time=${SECONDS}
log "starting the local control plane in ${LOCAL_DIR#"${REPO_ROOT}/"} ($(
  if training_enabled; then echo "with"; else echo "without"; fi
) training components; gang scheduling: Workload API $(
  if gang_workload_enabled; then echo "on"; else echo "off"; fi
), scheduler-plugins $(
  if scheduler_plugins_enabled; then echo "on"; else echo "off"; fi
), kueue $(
  if kueue_enabled; then echo "on"; else echo "off"; fi
))"

ready=0
on_exit() {
  local rc=$?
  restore_output
  if ((ready == 0 && rc != 0)); then
    log "start-up failed; stopping what was started (logs stay in ${LOCAL_LOG_DIR#"${REPO_ROOT}/"})"
    stop_all || true
  fi
}
on_signal() {
  # Finish stopping even if more signals arrive or stderr went away.
  trap '' INT TERM PIPE
  trap - EXIT
  restore_output
  echo >&2 2>/dev/null || true
  log "signal received; stopping the local control plane"
  stop_all || true
  exit 0
}
trap on_exit EXIT
if ((foreground)); then
  trap on_signal INT TERM
fi

# A fresh state directory each time (nothing runs, checked above).
# What a stopped or crashed earlier real node left behind goes first.
node_down
rm -rf "${LOCAL_DIR}"
mkdir -p "${LOCAL_DIR}" "${LOCAL_LOG_DIR}" "${LOCAL_PID_DIR}" "${LOCAL_CONFIG_DIR}"
save_settings
generate_pki
generate_configs
if real_node_running; then
  node_generate_pki
  node_generate_configs
  node_prepare
fi

start_component etcd
wait_component etcd

start_component kube-apiserver
wait_component kube-apiserver

if scheduler_plugins_enabled; then
  install_scheduler_plugins
fi
if kueue_enabled; then
  install_kueue
fi

start_component kube-controller-manager
start_component kube-scheduler
if scheduler_plugins_enabled; then
  start_component scheduler-plugins
fi
if kueue_enabled; then
  start_component kueue
fi
wait_component kube-controller-manager
wait_component kube-scheduler
if scheduler_plugins_enabled; then
  wait_component scheduler-plugins
fi
if kueue_enabled; then
  wait_component kueue
  install_kueue_queues
fi

# Before kwok runs: its deletes must behave as a kubelet's.
kubectl_local apply -f "${LOCAL_HACK_DIR}/kwok-pod-deletes.yaml" >/dev/null
start_component kwok
wait_component kwok
log "creating ${LOCAL_FAKE_NODES} fake nodes (cpu ${LOCAL_NODE_CPU}, memory ${LOCAL_NODE_MEMORY}, pods ${LOCAL_NODE_PODS}, nvidia.com/gpu ${LOCAL_NODE_GPUS} each)"
kubectl_local apply -f "${LOCAL_CONFIG_DIR}/fake-nodes.yaml" >/dev/null
wait_until kwok "${LOCAL_FAKE_NODES} fake nodes Ready" "${LOCAL_TIMEOUT}" all_fake_nodes_ready

if real_node_running; then
  start_component registry
  wait_component registry
  node_up
  install_storage
  start_component local-path-provisioner
  wait_component local-path-provisioner
fi

if training_enabled; then
  log "registering APIService ${TRAINING_APISERVICE} -> 127.0.0.1:${LOCAL_TRAINING_PORT} (Service ${TRAINING_NAMESPACE}/${TRAINING_SERVICE}, ExternalName localhost)"
  kubectl_local apply -f "${LOCAL_CONFIG_DIR}/training-apiservice.yaml" >/dev/null
  start_component training-apiserver
  wait_component training-apiserver
  start_component training-controller-manager
  wait_component training-controller-manager
  # The same user roles an installation gets, so kubectl --as a user bound
  # to view, edit or admin behaves locally as it will in a cluster.
  log "installing the user roles of artifacts/deploy (aggregated into view, edit and admin)"
  kubectl_local apply -f "${REPO_ROOT}/artifacts/deploy/base/rbac-users.yaml" >/dev/null
  # Every service account may send progress reports, as installed; the
  # server takes them only from the pods of the job reported on.
  kubectl_local apply -f "${REPO_ROOT}/artifacts/deploy/base/rbac-progress.yaml" >/dev/null
  # The PriorityClasses that t9kScheduler.priority maps to, as installed.
  kubectl_local apply -f "${REPO_ROOT}/artifacts/deploy/base/priorityclasses.yaml" >/dev/null
  # The controller's own API Priority and Fairness level, as installed (it
  # matches the controller when it runs as its ServiceAccount).
  kubectl_local apply -f "${REPO_ROOT}/artifacts/deploy/base/flowcontrol.yaml" >/dev/null
fi

if multikueue_enabled; then
  multikueue_worker_up
fi

wait_until "" "serviceaccount default in namespace default" "${LOCAL_TIMEOUT}" default_serviceaccount_exists

ready=1
log "local control plane ready in $((SECONDS - start_time))s"

cat >&2 <<EOF

  Use it:
    export KUBECONFIG=${LOCAL_KUBECONFIG}
    ${BIN_DIR#"${REPO_ROOT}/"}/kubectl get nodes
    ${BIN_DIR#"${REPO_ROOT}/"}/kubectl get tj,pj
    ${BIN_DIR#"${REPO_ROOT}/"}/kubectl apply -f artifacts/examples/<example>.yaml
$(if kueue_enabled; then
  echo "    ${BIN_DIR#"${REPO_ROOT}/"}/kubectl get clusterqueues,localqueues,workloads.kueue.x-k8s.io -A   # Kueue"
fi)
  Logs: ${LOCAL_LOG_DIR#"${REPO_ROOT}/"}/<component>.log
  Fake pods: annotate kwok.tensorstack.dev/exit-code=<n> (and kwok.tensorstack.dev/run-duration=<duration>)
  to make a pod's containers exit; see hack/local/kwok-stages/pod-exit-code.yaml.
EOF

if ((foreground == 0)); then
  echo "  Stop it: hack/local-down.sh (make local-down)" >&2
  exit 0
fi

echo "  Press Ctrl-C to stop everything." >&2
# Watch the components; if one dies, stop the rest and fail.
while true; do
  for c in "${components[@]}"; do
    if ! component_pid "${c}" >/dev/null; then
      trap - INT TERM EXIT
      show_log_tail "${c}"
      log "ERROR: ${c} exited unexpectedly; stopping the rest"
      stop_all || true
      exit 1
    fi
  done
  sleep 2 &
  wait $! || true
done
