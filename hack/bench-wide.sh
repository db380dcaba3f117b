#!/usr/bin/env bash
# The wide-job benchmark (make bench-wide): starts the local control plane
# (kwok nodes only), makes BENCH_PODS pods with a bare ReplicaSet (the floor,
# kube-controller-manager) and then with one PyTorchTrainingJob of a master
# and BENCH_PODS-1 workers (test/bench/wide), and always stops the stack.
# Prints a markdown table, also saved in _output/bench/wide.md. How to read
# it: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_PODS=1000           pods of the ReplicaSet and of the job
#   LOCAL_*                   the stack's settings (hack/local-up.sh); the benchmark
#                             defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS,
#                             LOCAL_GANG_WORKLOAD and LOCAL_REAL_NODE to 0, and
#                             LOCAL_FAKE_NODES to enough nodes for every pod
set -euo pipefail

: "${BENCH_PODS:=1000}"
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
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_NODE_PODS LOCAL_FAKE_NODES BENCH_PODS

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"

bench_refuse_running_stack
bench_build bench-wide ./test/bench/wide
bench_stop_stack_on_exit

"${HACK_DIR}/local-up.sh"
load_settings
"${BENCH_BIN_DIR}/bench-wide" -local-dir "${LOCAL_DIR}" -out "${BENCH_DIR}/wide.md"
