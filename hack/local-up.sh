#!/usr/bin/env bash
# Starts a complete control plane on 127.0.0.1 from the binaries in _output/bin:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a second
#   scheduler (scheduler-plugins, coscheduling), Kueue (job queueing and quota),
#   kwok with fake GPU nodes, and TensorStack's training-apiserver (registered
#   as the aggregated API batch.tensorstack.dev/v1beta1) and
#   training-controller-manager.
#
# It runs the Go program hack/localcluster (internal/localcluster), which
# describes every component once and starts, waits for and stops them in
# one loop; a failed start stops what it started.
#
# Usage: hack/local-up.sh [--foreground] [--retain] [--dry-run] [--real-nodes=N]
#   without --foreground  start everything in the background and return once all
#                         of it is ready; stop it with hack/local-down.sh
#   --foreground          start everything, then wait; Ctrl-C (or SIGTERM) stops
#                         it all in reverse order and exits 0; a component that
#                         exits (not through hack/local-restart.sh) stops the rest
#   --retain              keep what a failed start made, for inspection
#   --dry-run             print every command and file instead (no root needed)
#
# State, logs and the admin kubeconfig are under _output/local (wiped at each
# start). Settings (environment; defaults in internal/localcluster/spec/settings.go):
#   LOCAL_ETCD_PORT=23790 LOCAL_ETCD_PEER_PORT=23791 LOCAL_APISERVER_PORT=16443
#   LOCAL_KCM_PORT=16257 LOCAL_SCHEDULER_PORT=16259 LOCAL_SCHEDULER_PLUGINS_PORT=16261
#   LOCAL_KWOK_PORT=16247 LOCAL_KUEUE_WEBHOOK_PORT=16263 LOCAL_KUEUE_METRICS_PORT=16264
#   LOCAL_KUEUE_HEALTH_PORT=16265
#   LOCAL_TRAINING_PORT=18443 LOCAL_TRAINING_METRICS_PORT=18080 LOCAL_TRAINING_HEALTH_PORT=18081
#   LOCAL_PORT_OFFSET=0       moves every port not set explicitly by as much: a second stack (another
#                             LOCAL_DIR) beside the first, as make test runs its suites
#   LOCAL_FAKE_NODES=10 LOCAL_NODE_CPU=1000 LOCAL_NODE_MEMORY=4Ti LOCAL_NODE_PODS=500 LOCAL_NODE_GPUS=64
#   LOCAL_SKIP_TRAINING=1     do not start training-apiserver / training-controller-manager
#   LOCAL_REAL_NODE=0         no real nodes: without it, where the machine allows (root,
#                             cgroup v1, overlayfs), real nodes (each its own containerd, runc,
#                             kubelet, kube-proxy and CoreDNS in network and mount namespaces of
#                             its own, its own pod CIDR routed to the others; internal/localcluster
#                             node.go) run the pods whose images are all the stack's own, with
#                             the registry and local-path-provisioner (the default StorageClass)
#                             beside them; otherwise kwok nodes only
#   LOCAL_REAL_NODES=N        how many real nodes (default: 2 with 2 CPUs and 6 GiB, else 1);
#                             named real-node, real-node2, ...; each its own rack
#                             (topology.tensorstack.dev/rack=real-rack-<i>), two racks a zone
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
#                             batch/v1 Jobs, every job kind as
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

for arg in "$@"; do
  if [[ "${arg}" == -h || "${arg}" == --help ]]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 0
  fi
done

# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"
# The Debian packages the stack needs (hack/lib/packages.sh): installing them
# stays in bash, beside the other scripts that do.
if [[ " $* " != *" --dry-run "* ]]; then
  require_stack_packages
fi
localcluster up "$@"
