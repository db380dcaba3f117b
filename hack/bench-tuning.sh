#!/usr/bin/env bash
# The hyperparameter search benchmark (make bench-tuning): starts the local
# control plane with its real nodes and nothing else (no Kueue, no second
# scheduler), runs test/bench/tuning and always stops the control plane
# again. It runs the example search of docs/tuning.md under asha next to the
# same search without early stopping (the same seed, so the same trials),
# and prints a markdown table of the pod-seconds each spends and the best
# loss each reaches, also saved in _output/bench/tuning.md.
#
# Settings (environment):
#   BENCH_TUNING_TOLERANCE=0.10   how much worse asha's best loss may be and
#                                 still count as the same
#   LOCAL_*                       the stack's settings (hack/local-up.sh)
set -euo pipefail

: "${LOCAL_KUEUE:=0}"
: "${LOCAL_SCHEDULER_PLUGINS:=0}"
: "${LOCAL_GANG_WORKLOAD:=0}"
: "${LOCAL_FAKE_NODES:=1}"
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_FAKE_NODES
export LOCAL_REAL_NODE=1

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

if why="$(node_cannot_run)"; then
  die "the real node cannot run here: ${why}"
fi
refuse_running_stack
bench_build bench-tuning ./test/bench/tuning

require_packages "the local stack" curl:curl iptables:iptables conntrack:conntrack
# shellcheck disable=SC2016 # expanded by the inner shell, in the stack's environment
localcluster run -- bash -c '
  if [[ "${LOCAL_REAL_NODE_RUNNING}" != 1 ]]; then
    echo "the stack came up without its real node; see the output above" >&2
    exit 1
  fi
  exec "$@"' bench-tuning "${BENCH_BIN_DIR}/bench-tuning" -local-dir "${LOCAL_DIR}" \
  -example "${REPO_ROOT}/artifacts/examples/tuning/pytorch-lr-search.yaml" -out "${BENCH_DIR}/tuning.md"
