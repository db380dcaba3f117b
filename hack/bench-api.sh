#!/usr/bin/env bash
# The API benchmark (make bench-api): starts the local control plane,
# installs Kubeflow's TFJob CRD next to our aggregated API, runs
# test/bench/api against three targets and always stops the control plane
# again (localcluster run, whose command is this script again, with
# --in-stack). Prints a markdown table, also saved in _output/bench/api.md.
# How to read it: docs/benchmarks.md.
#
#   CRD         Kubeflow's TFJob (training-operator v1.9.4), served by kube-apiserver
#   aggregated  our TensorFlowTrainingJob through kube-apiserver (the aggregator)
#   direct      our TensorFlowTrainingJob on the training-apiserver's own port
#
# Every job is chief 1 + ps 1 + worker 3, created paused (ours) or suspended
# (TFJob), and the training-controller-manager is stopped: only the
# benchmark writes the jobs, and no pod is made.
#
# Settings (environment):
#   BENCH_JOBS=2000          jobs per target
#   BENCH_CONCURRENCY=8      requests in flight while creating and deleting
#   BENCH_LIST_REPEATS=5     full LISTs of each kind per target (the median is printed)
#   BENCH_MEMORY_JOBS=10000  jobs each storing server holds for the memory table
#                            (0: none); measured after kube-apiserver and the
#                            training-apiserver were restarted, so that what the
#                            speed runs left in their watch caches is not counted
#   LOCAL_*                  the stack's settings (hack/local-up.sh); the benchmark
#                            defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS and
#                            LOCAL_GANG_WORKLOAD and LOCAL_REAL_NODE to 0, a quiet stack
set -euo pipefail

: "${LOCAL_KUEUE:=0}"
: "${LOCAL_SCHEDULER_PLUGINS:=0}"
: "${LOCAL_GANG_WORKLOAD:=0}"
: "${LOCAL_REAL_NODE:=0}"
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_REAL_NODE

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
  bench_build bench-api ./test/bench/api
  kubeflow_crd tfjobs >/dev/null
  require_stack_packages
  localcluster run -- "${HACK_DIR}/bench-api.sh" --in-stack
  exit
fi

# On the stack, as localcluster run's command, with the stack's environment.
# Nothing but the benchmark writes the jobs.
"${HACK_DIR}/local-restart.sh" --stop training-controller-manager
install_kubeflow_crd tfjobs

"${BENCH_BIN_DIR}/bench-api" -local-dir "${LOCAL_DIR}" -memory-jobs 0 -out "${BENCH_DIR}/api.md"

if (( ${BENCH_MEMORY_JOBS:-10000} > 0 )); then
  log "restarting kube-apiserver and training-apiserver for the memory table"
  "${HACK_DIR}/local-restart.sh" kube-apiserver
  "${HACK_DIR}/local-restart.sh" training-apiserver
  wait_until "" "TFJobs served" "${LOCAL_TIMEOUT}" kubectl_local get tfjobs.kubeflow.org -A -o name
  "${BENCH_BIN_DIR}/bench-api" -local-dir "${LOCAL_DIR}" -targets crd,direct -memory-only -out "${BENCH_DIR}/api-memory.md"
  cat "${BENCH_DIR}/api-memory.md" >>"${BENCH_DIR}/api.md"
fi
log "tables saved in ${BENCH_DIR#"${REPO_ROOT}/"}/api.md"
