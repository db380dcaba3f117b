#!/usr/bin/env bash
# The wide-job benchmark (make bench-wide): starts the local control plane
# (kwok nodes only), makes BENCH_PODS pods with an Indexed Job (the floor,
# kube-controller-manager) and a bare ReplicaSet, then with one job of every
# kind of a leader and BENCH_PODS-1 workers (test/bench/wide) and, with
# BENCH_PEER, the same shape under each peer in turn, our controller stopped:
# Kubeflow's PyTorchJob under training-operator v1.9.4, and a JobSet v0.12.0
# of a leader Job and an Indexed Job of the workers (kube-controller-manager
# makes their pods). Always stops the stack (localcluster run, whose command
# is this script again, with --in-stack). Prints a markdown table, also
# saved in _output/bench/wide.md. How to read it: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_PODS=1000           pods of each workload
#   BENCH_ROUNDS=3            rounds of the workloads (the table shows medians)
#   BENCH_WORKLOADS           which to run, comma-separated (default: indexed-job,
#                             replicaset,pytorch,tensorflow,xgboost,generic,mpi)
#   BENCH_PEER                peers, comma-separated, after ours:
#                             training-operator (go install from the module
#                             proxy, a few minutes cold) and jobset (go build in
#                             _output/jobset-build, about 5 minutes cold); each
#                             needs root for its network namespace
#                             (hack/lib/peer.sh)
#   BENCH_PEER_ARGS           training-operator's tuning flags
#                             (default --controller-threads=8 --kube-api-qps=1000 --kube-api-burst=2000)
#   BENCH_JOBSET_ARGS         JobSet's (default --kube-api-qps=1000 --kube-api-burst=2000)
#   LOCAL_*                   the stack's settings (hack/local-up.sh); the benchmark
#                             defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS,
#                             LOCAL_GANG_WORKLOAD and LOCAL_REAL_NODE to 0, and
#                             LOCAL_FAKE_NODES to enough nodes for every pod
set -euo pipefail

: "${BENCH_PODS:=1000}"
: "${BENCH_PEER:=}"
: "${BENCH_PEER_ARGS:=--controller-threads=8 --kube-api-qps=1000 --kube-api-burst=2000}"
: "${BENCH_JOBSET_ARGS:=--kube-api-qps=1000 --kube-api-burst=2000}"
export BENCH_PODS BENCH_PEER BENCH_PEER_ARGS BENCH_JOBSET_ARGS
# The stack's settings (on the stack, --in-stack, the stack's own).
if [[ "${1:-}" != --in-stack ]]; then
  : "${LOCAL_KUEUE:=0}"
  : "${LOCAL_SCHEDULER_PLUGINS:=0}"
  : "${LOCAL_GANG_WORKLOAD:=0}"
  : "${LOCAL_NODE_PODS:=500}"
  : "${LOCAL_FAKE_NODES:=10}"
  nodes_needed=$(((BENCH_PODS + LOCAL_NODE_PODS - 1) / LOCAL_NODE_PODS))
  if ((LOCAL_FAKE_NODES < nodes_needed)); then
    LOCAL_FAKE_NODES="${nodes_needed}"
  fi
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
# shellcheck source=hack/lib/peer.sh
source "${HACK_DIR}/lib/peer.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

peer_setting training-operator jobset

# wide_peer_kind PEER: the kind each peer runs here.
wide_peer_kind() {
  case "$1" in
    training-operator) echo PyTorchJob ;;
    jobset) echo JobSet ;;
  esac
}

BENCH="${BENCH_BIN_DIR}/bench-wide"
OURS_JSON="${BENCH_DIR}/wide-ours.json"

if [[ "${1:-}" != --in-stack ]]; then
  refuse_running_stack
  bench_build bench-wide ./test/bench/wide
  for peer in "${BENCH_PEERS[@]}"; do
    peer_prepare "$(wide_peer_kind "${peer}")"
  done
  rm -f "${OURS_JSON}" "${BENCH_DIR}"/wide-peer*.json
  require_stack_packages
  localcluster run -- "${HACK_DIR}/bench-wide.sh" --in-stack
  exit
fi

# On the stack, as localcluster run's command, with the stack's environment;
# a peer goes before localcluster run stops the stack.
# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
  local rc=$?
  trap '' INT TERM
  peer_stop
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${BENCH}" run -local-dir "${LOCAL_DIR}" ${BENCH_WORKLOADS:+-workloads "${BENCH_WORKLOADS}"} -json "${OURS_JSON}"

results=("${OURS_JSON}")
if ((${#BENCH_PEERS[@]})); then
  # The peers get the machine without our controller, one at a time.
  "${HACK_DIR}/local-restart.sh" --stop training-controller-manager
fi
for peer in "${BENCH_PEERS[@]}"; do
  peer_json="${BENCH_DIR}/wide-peer-${peer}.json"
  args="${BENCH_PEER_ARGS}"
  if [[ "${peer}" == jobset ]]; then
    args="${BENCH_JOBSET_ARGS}"
  fi
  # Word splitting of the flags is intended.
  # shellcheck disable=SC2086
  peer_start "$(wide_peer_kind "${peer}")" ${args}
  "${BENCH}" run -local-dir "${LOCAL_DIR}" -workloads "${peer}" -controller-pid "${PEER_PID}" -json "${peer_json}"
  peer_stop
  results+=("${peer_json}")
done
"${BENCH}" report -out "${BENCH_DIR}/wide.md" "${results[@]}"
log "table saved in ${BENCH_DIR#"${REPO_ROOT}/"}/wide.md"
