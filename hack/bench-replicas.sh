#!/usr/bin/env bash
# The replicas benchmark (make bench-replicas): starts the local control
# plane (kwok nodes only) with the training-apiserver on the stack's etcd
# (as artifacts/deploy runs its replicas on one etcd cluster) and the
# controller stopped, then measures one replica against two
# (test/bench/replicas): creates sent straight to the replicas and through
# kube-apiserver, pages, a watch on the other replica, memory. The second
# replica runs with the first one's command line on another port; the
# APIService goes through a connection balancer for the run and is routed
# back after it. Always stops the stack. Prints a markdown table, also saved
# in _output/bench/replicas.md. How to read it: docs/benchmarks.md.
#
# Settings (environment):
#   BENCH_JOBS=3000          jobs created each way per measurement
#   BENCH_CONCURRENCY=8      requests in flight
#   BENCH_ROUNDS=3           rounds of one replica then two (medians)
#   LOCAL_*                  the stack's settings (hack/local-up.sh); the benchmark
#                            defaults LOCAL_KUEUE, LOCAL_SCHEDULER_PLUGINS,
#                            LOCAL_GANG_WORKLOAD and LOCAL_REAL_NODE to 0
set -euo pipefail

: "${LOCAL_KUEUE:=0}"
: "${LOCAL_SCHEDULER_PLUGINS:=0}"
: "${LOCAL_GANG_WORKLOAD:=0}"
: "${LOCAL_REAL_NODE:=0}"
LOCAL_TRAINING_APISERVER_EXTRA_ARGS="${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:-} --etcd-servers=http://127.0.0.1:${LOCAL_ETCD_PORT:-23790}"
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_REAL_NODE LOCAL_TRAINING_APISERVER_EXTRA_ARGS

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
bench_build bench-replicas ./test/bench/replicas
# The stack for the length of the benchmark (localcluster run stops it whatever the benchmark did), with the
# controller stopped first: the benchmark measures the API alone.
require_packages "the local stack" curl:curl
localcluster run -- bash -c '"$0" --stop training-controller-manager && exec "$@"' \
  "${HACK_DIR}/local-restart.sh" "${BENCH_BIN_DIR}/bench-replicas" -local-dir "${LOCAL_DIR}" -out "${BENCH_DIR}/replicas.md"
