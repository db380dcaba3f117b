#!/usr/bin/env bash
# The real-node benchmark (make bench-real): starts the local control plane
# with its real node and nothing else (no Kueue, no second scheduler), runs
# test/bench/real and always stops the control plane again. Prints a markdown
# table, also saved in _output/bench/real.md:
#   - a bare Pod of the training image on the real node, torchrun standalone:
#     from its create to its first training step (the floor);
#   - two bare Pods behind a headless Service, torchrun with a static
#     rendezvous between them: from their create to every rank's first step;
#   - a PyTorchTrainingJob of 2 ranks (torchrun, gloo) with its default
#     rendezvous, static, and one with c10d: from its create to every rank's
#     first training step;
#   - the default job: from its last rank's exit to Succeeded;
#   - a RestartJob after a SIGKILL of rank 1, restartStrategy Recreate next
#     to InPlace: from the kill to every rank past a step of the new attempt.
#
# Settings (environment):
#   BENCH_RUNS=5   runs of each measurement (the median, min and max are printed)
#   BENCH_REAL_ONLY=recovery   only the recovery measurement
#   LOCAL_*        the stack's settings (hack/local-up.sh)
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

bench_build bench-real ./test/bench/real
bench_on_real_nodes bench-real "${BENCH_BIN_DIR}/bench-real" -local-dir "${LOCAL_DIR}" -ctr "${BIN_DIR}/ctr" -out "${BENCH_DIR}/real.md"
