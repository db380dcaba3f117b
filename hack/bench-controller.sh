#!/usr/bin/env bash
# The controller benchmark (make bench-controller): starts the local control
# plane, runs BENCH_JOBS jobs of chief 1 + ps 1 + worker 3 whose pods exit 0
# after BENCH_RUN_FOR through our training-controller-manager
# (test/bench/controller), optionally the same number of Kubeflow TFJobs
# through Kubeflow's training-operator on the same stack, and always stops
# everything it started (the stack: localcluster run, whose command is this
# script again, with --in-stack). Prints a markdown table, also saved in
# _output/bench/controller.md. How to read it: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_JOBS=500           jobs (× 5 pods)
#   BENCH_RUN_FOR=20s        how long each pod runs before it exits 0
#   BENCH_CONCURRENCY=8      creates in flight
#   BENCH_CONTROLLER_ARGS    our controller's flags (default none: the shipped defaults,
#                            no client-side limit, 10 workers)
#   BENCH_PEER=training-operator
#                            also run Kubeflow training-operator v1.9.4 (built with
#                            go install into _output/bin on first use) on the same
#                            number of TFJobs, after ours, and print both columns
#   BENCH_PEER_ARGS          its tuning flags
#                            (default --controller-threads=8 --kube-api-qps=1000 --kube-api-burst=2000)
#   LOCAL_*                  the stack's settings (hack/local-up.sh); the benchmark
#                            defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS and
#                            LOCAL_GANG_WORKLOAD to 0, LOCAL_FAKE_NODES to enough
#                            nodes for every pod at once, and
#                            LOCAL_TRAINING_METRICS_SECURE to 0, so that it reads
#                            the controller's counters without a token
#
# The peer runs in a network namespace of its own (hack/lib/peer.sh); it
# needs root (ip netns).
set -euo pipefail

: "${BENCH_JOBS:=500}"
: "${BENCH_RUN_FOR:=20s}"
: "${BENCH_CONCURRENCY:=8}"
: "${BENCH_CONTROLLER_ARGS=}"
: "${BENCH_PEER:=}"
: "${BENCH_PEER_ARGS:=--controller-threads=8 --kube-api-qps=1000 --kube-api-burst=2000}"
export BENCH_JOBS BENCH_RUN_FOR BENCH_CONCURRENCY BENCH_CONTROLLER_ARGS BENCH_PEER BENCH_PEER_ARGS
# The stack's settings (on the stack, --in-stack, the stack's own).
if [[ "${1:-}" != --in-stack ]]; then
  : "${LOCAL_KUEUE:=0}"
  : "${LOCAL_SCHEDULER_PLUGINS:=0}"
  : "${LOCAL_GANG_WORKLOAD:=0}"
  : "${LOCAL_TRAINING_METRICS_SECURE:=0}"
  : "${LOCAL_NODE_PODS:=500}"
  : "${LOCAL_FAKE_NODES:=10}"
  # Room for every pod at once.
  nodes_needed=$(((BENCH_JOBS * 5 + LOCAL_NODE_PODS - 1) / LOCAL_NODE_PODS))
  if ((LOCAL_FAKE_NODES < nodes_needed)); then
    LOCAL_FAKE_NODES="${nodes_needed}"
  fi
  LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-} ${BENCH_CONTROLLER_ARGS}"
  export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
  export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_NODE_PODS LOCAL_FAKE_NODES LOCAL_TRAINING_METRICS_SECURE
  export LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS
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

peer_setting training-operator
BENCH="${BENCH_BIN_DIR}/bench-controller"
OURS_JSON="${BENCH_DIR}/controller-ours.json"
PEER_JSON="${BENCH_DIR}/controller-peer.json"

if [[ "${1:-}" != --in-stack ]]; then
  refuse_running_stack
  bench_build bench-controller ./test/bench/controller
  if [[ -n "${BENCH_PEER}" ]]; then
    peer_prepare TFJob
  fi
  rm -f "${OURS_JSON}" "${PEER_JSON}"
  require_stack_packages
  localcluster run -- "${HACK_DIR}/bench-controller.sh" --in-stack
  exit
fi

# On the stack, as localcluster run's command, with the stack's environment;
# the peer goes before localcluster run stops the stack.
reported=0

# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
  local rc=$?
  trap '' INT TERM
  if ((rc != 0 && reported == 0)) && [[ -f "${OURS_JSON}" ]]; then
    log "the run failed after ours had finished; ours alone:"
    "${BENCH}" report -out "${BENCH_DIR}/controller.md" \
      -peer-note "No peer column: the ${BENCH_PEER:-peer} run failed (see ${PEER_LOG#"${REPO_ROOT}/"} and the lines above)." \
      "${OURS_JSON}" || true
  fi
  peer_stop
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${BENCH}" run -kind ours -local-dir "${LOCAL_DIR}" -controller-flags "${BENCH_CONTROLLER_ARGS}" -out "${OURS_JSON}"

if [[ -n "${BENCH_PEER}" ]]; then
  # Ours is done and its namespace gone; the peer gets the stack alone, and
  # a kube-apiserver started afresh, as ours had: its peak memory then
  # does not carry what ours left in its caches.
  "${HACK_DIR}/local-restart.sh" --stop training-controller-manager
  "${HACK_DIR}/local-restart.sh" kube-apiserver
  wait_until "" "APIService ${TRAINING_APISERVICE} Available" "${LOCAL_TIMEOUT}" apiservice_available
  # Word splitting of the flags is intended.
  # shellcheck disable=SC2086
  peer_start TFJob ${BENCH_PEER_ARGS}

  "${BENCH}" run -kind training-operator -local-dir "${LOCAL_DIR}" -controller-pid "${PEER_PID}" \
    -controller-flags "${BENCH_PEER_ARGS}" -out "${PEER_JSON}"
  "${BENCH}" report -out "${BENCH_DIR}/controller.md" "${OURS_JSON}" "${PEER_JSON}"
else
  "${BENCH}" report -out "${BENCH_DIR}/controller.md" \
    -peer-note "No peer column: run with BENCH_PEER=training-operator for Kubeflow's training-operator v1.9.4 on the same jobs." \
    "${OURS_JSON}"
fi
reported=1
log "table saved in ${BENCH_DIR#"${REPO_ROOT}/"}/controller.md"
