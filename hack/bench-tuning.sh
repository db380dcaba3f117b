#!/usr/bin/env bash
# The hyperparameter search benchmark (make bench-tuning): on a local control
# plane of its own with the real nodes, runs the example search of
# docs/tuning.md under asha next to the same search without early stopping
# (the same seed, so the same trials), and prints a markdown table of the
# pod-seconds each spends and the best loss each reaches, also saved in
# _output/bench/tuning.md.
#
# Settings (environment):
#   BENCH_TUNING_TOLERANCE=0.10   how much worse asha's best loss may be and
#                                 still count as the same
#   LOCAL_*                       the stack's settings (hack/local-up.sh)
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/realbench.sh
source "${HACK_DIR}/lib/realbench.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

bench_build bench-tuning ./test/bench/tuning
bench_on_real_nodes bench-tuning "${BENCH_BIN_DIR}/bench-tuning" -local-dir "${LOCAL_DIR}" \
  -example "${REPO_ROOT}/artifacts/examples/tuning/pytorch-lr-search.yaml" -out "${BENCH_DIR}/tuning.md"
