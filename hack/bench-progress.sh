#!/usr/bin/env bash
# The progress benchmark (make bench-progress): starts the local control
# plane (kwok nodes only), runs BENCH_JOBS PyTorch jobs of one pod each
# (test/bench/progress), measures BENCH_DURATION with no reports, then
# BENCH_DURATION with every job reporting every BENCH_REPORT_EVERY through
# kube-apiserver with a token bound to its pod, and always stops the stack.
# Prints a markdown table, also saved in _output/bench/progress.md. How to
# read it: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_JOBS=500            running jobs
#   BENCH_REPORT_EVERY=1s     how often each job reports
#   BENCH_DURATION=30s        length of each phase
#   LOCAL_*                   the stack's settings (hack/local-up.sh); the benchmark
#                             defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS,
#                             LOCAL_GANG_WORKLOAD and LOCAL_REAL_NODE to 0
set -euo pipefail

: "${LOCAL_KUEUE:=0}"
: "${LOCAL_SCHEDULER_PLUGINS:=0}"
: "${LOCAL_GANG_WORKLOAD:=0}"
export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

refuse_running_stack
bench_build bench-progress ./test/bench/progress

# The stack for the length of the benchmark (localcluster run stops it whatever the benchmark did).
require_packages "the local stack" curl:curl
localcluster run -- "${BENCH_BIN_DIR}/bench-progress" -local-dir "${LOCAL_DIR}" -out "${BENCH_DIR}/progress.md"
