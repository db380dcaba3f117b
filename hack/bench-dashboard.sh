#!/usr/bin/env bash
# The dashboard's benchmark (make bench-dashboard): starts a local stack of its
# own (kwok nodes only, LOCAL_DIR _output/local-bench-dashboard, ports moved by
# LOCAL_PORT_OFFSET, 5500 by default, clear of make test's stacks), creates
# BENCH_JOBS paused jobs, one job with a progress history of BENCH_POINTS reports and BENCH_COMPARE
# paused jobs with as many, for the comparison page, and runs
# pkg/dashboard/ui/test/bench.mjs:
# kubectl training dashboard in Debian's Chromium, BENCH_RUNS times each,
# beside the floor of the same table as static HTML; then the load test
# (test/bench/dashboardload): the dashboard served as in the cluster, a real
# user signed in, BENCH_FORGED forged sign-ins and BENCH_STREAMS event streams
# (BENCH_STALLED of them never read) at once, against the release's memory
# limit. Prints markdown tables, also saved in _output/bench/dashboard.md and
# dashboard-load.md, and always stops the stack. How to read them:
# docs/benchmarks.md.
#
# Settings (environment): BENCH_JOBS=1000, BENCH_POINTS=2000, BENCH_COMPARE=10, BENCH_RUNS=5, BENCH_FORGED=10000,
# BENCH_QUEUES=50 ClusterQueues and BENCH_PENDING=1000 pending Workloads (the Queues page), BENCH_RECORDS=10000
# records of deleted jobs in BENCH_RECORD_NAMESPACES=10 namespaces (the History), BENCH_STREAMS=200,
# BENCH_STALLED=20, BENCH_PARTS="browser load" (either alone), and the stack's LOCAL_* (hack/local-up.sh).
set -euo pipefail

: "${BENCH_JOBS:=1000}"
: "${BENCH_RUNS:=5}"
: "${BENCH_FORGED:=10000}"
: "${BENCH_STREAMS:=200}"
: "${BENCH_STALLED:=20}"
: "${BENCH_PARTS:=browser load}"
export BENCH_JOBS BENCH_RUNS

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/browser.sh
source "${HACK_DIR}/lib/browser.sh"
# Every report stored: the charted job's history is BENCH_POINTS reports.
browser_stack_settings 5500 1ms
export LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local-bench-dashboard}"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"
# shellcheck source=hack/lib/bench.sh
source "${HACK_DIR}/lib/bench.sh"

[[ " ${BENCH_PARTS} " != *" browser "* ]] || require_browser "the dashboard's benchmark"

cd "${REPO_ROOT}"
export REPO_ROOT
mkdir -p "${OUTPUT_DIR}/bench"
export BENCH_OUT="${OUTPUT_DIR}/bench/dashboard.md"
# The server's binary as a deployed one starts: read from disk, not just
# written by the linker. Pages the build wrote stay in the page cache as
# larger blocks, which the kernel maps whole on a fault: measured, the same
# server then holds about 4 MiB more of its binary. Written back and dropped
# from the page cache (GNU dd's documented way), it is read in as any start
# reads it.
dd of="${BIN_DIR}/kubectl-training" oflag=nocache conv=notrunc,fdatasync count=0 status=none
bench_build dashboard-load ./test/bench/dashboardload
parts=()
[[ " ${BENCH_PARTS} " != *" browser "* ]] || parts+=("node pkg/dashboard/ui/test/bench.mjs")
[[ " ${BENCH_PARTS} " != *" load "* ]] || parts+=("'${BENCH_BIN_DIR}/dashboard-load' -kubectl-training '${BIN_DIR}/kubectl-training' \
  -forged ${BENCH_FORGED} -streams ${BENCH_STREAMS} -stalled ${BENCH_STALLED} -out '${OUTPUT_DIR}/bench/dashboard-load.md'")
(( ${#parts[@]} > 0 )) || die "BENCH_PARTS=${BENCH_PARTS}: name browser, load or both"
# One stack for both parts, one after the other.
script="set -e"
for part in "${parts[@]}"; do
  script+=$'\n'"${part}"
done
localcluster run -- bash -c "${script}"
