#!/usr/bin/env bash
# The scale benchmark (make bench-scale): starts the local control plane
# (kwok nodes only), stores BENCH_JOBS jobs of which all but BENCH_RUNNING
# are finished, with the controller stopped, then measures the
# training-apiserver on that history and the controller starting on it
# (test/bench/scale); with BENCH_CRD=1 (the default) it then stores the same
# history as Kubeflow TFJobs in kube-apiserver and measures that as ours,
# and always stops the stack (localcluster run, whose command is this script
# again, with --in-stack). Prints markdown tables,
# also saved in _output/bench/scale.md. How to read them: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_JOBS=100000         jobs stored (× 5 replicas each)
#   BENCH_RUNNING=500         of them, jobs whose pods the controller makes
#   BENCH_ETCD=embedded       the training-apiserver's etcd: embedded (the local
#                             default), or external: the stack's etcd, which
#                             kube-apiserver uses too (as artifacts/deploy runs
#                             one etcd beside the server), so that the server's
#                             RSS holds no etcd
#   BENCH_CRD=1               also Kubeflow's TFJob CRD (training-operator v1.9.4's
#                             manifest, from the module proxy) on the same history,
#                             in kube-apiserver with our servers stopped; 0 leaves
#                             it out
#   LOCAL_*                   the stack's settings (hack/local-up.sh); the benchmark
#                             defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS,
#                             LOCAL_GANG_WORKLOAD and LOCAL_REAL_NODE to 0, and
#                             LOCAL_FAKE_NODES to enough nodes for every pod
set -euo pipefail

: "${BENCH_JOBS:=100000}"
: "${BENCH_RUNNING:=500}"
: "${BENCH_ETCD:=embedded}"
: "${BENCH_CRD:=1}"
export BENCH_JOBS BENCH_RUNNING BENCH_ETCD BENCH_CRD
# The stack's settings (on the stack, --in-stack, the stack's own).
if [[ "${1:-}" != --in-stack ]]; then
  : "${LOCAL_KUEUE:=0}"
  : "${LOCAL_SCHEDULER_PLUGINS:=0}"
  : "${LOCAL_GANG_WORKLOAD:=0}"
  : "${LOCAL_NODE_PODS:=500}"
  : "${LOCAL_FAKE_NODES:=10}"
  nodes_needed=$(((BENCH_RUNNING * 5 + LOCAL_NODE_PODS - 1) / LOCAL_NODE_PODS))
  if ((LOCAL_FAKE_NODES < nodes_needed)); then
    LOCAL_FAKE_NODES="${nodes_needed}"
  fi
  case "${BENCH_ETCD}" in
    embedded) ;;
    external)
      LOCAL_TRAINING_APISERVER_EXTRA_ARGS="${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:-} --etcd-servers=http://127.0.0.1:${LOCAL_ETCD_PORT:-23790}"
      export LOCAL_TRAINING_APISERVER_EXTRA_ARGS
      ;;
    *)
      echo "BENCH_ETCD=${BENCH_ETCD}: embedded or external" >&2
      exit 1
      ;;
  esac
  export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
  export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_NODE_PODS LOCAL_FAKE_NODES
fi

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

if [[ "${1:-}" != --in-stack ]]; then
  refuse_running_stack
  bench_build bench-scale ./test/bench/scale
  if ((BENCH_CRD)); then
    kubeflow_crd tfjobs >/dev/null
  fi
  require_stack_packages
  localcluster run -- "${HACK_DIR}/bench-scale.sh" --in-stack
  exit
fi

# On the stack, as localcluster run's command, with the stack's environment.
if ((BENCH_CRD)); then
  install_kubeflow_crd tfjobs
fi
"${BENCH_BIN_DIR}/bench-scale" -local-dir "${LOCAL_DIR}" -etcd "${BENCH_ETCD}" -restart "${HACK_DIR}/local-restart.sh" -out "${BENCH_DIR}/scale.md"
