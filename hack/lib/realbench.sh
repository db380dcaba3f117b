#!/usr/bin/env bash
# Shared by the benchmarks on the real nodes (hack/bench-real.sh,
# hack/bench-tuning.sh): the quiet stack they run on, and the run itself.
# Source it after hack/lib/common.sh and before hack/lib/local.sh, which
# fills in the settings left unset when it is sourced.

# A stack of the real nodes and nothing else (no Kueue, no second
# scheduler), unless the environment asks for more.
: "${LOCAL_KUEUE:=0}"
: "${LOCAL_SCHEDULER_PLUGINS:=0}"
: "${LOCAL_GANG_WORKLOAD:=0}"
: "${LOCAL_FAKE_NODES:=1}"
export LOCAL_KUEUE LOCAL_SCHEDULER_PLUGINS LOCAL_GANG_WORKLOAD LOCAL_FAKE_NODES
export LOCAL_REAL_NODE=1

# bench_on_real_nodes NAME PROGRAM ARGS...: runs a benchmark program on a
# local stack of its own with the real nodes, and always stops the stack
# again. It refuses to start where the real nodes cannot run or a stack
# already runs, and runs the program only where the stack's real node came
# up.
bench_on_real_nodes() {
  local name="$1" why
  shift
  if why="$(node_cannot_run)"; then
    die "the real node cannot run here: ${why}"
  fi
  refuse_running_stack
  require_packages "the local stack" curl:curl iptables:iptables conntrack:conntrack
  # shellcheck disable=SC2016 # expanded by the inner shell, in the stack's environment
  localcluster run -- bash -c '
    if [[ "${LOCAL_REAL_NODE_RUNNING}" != 1 ]]; then
      echo "the stack came up without its real node; see the output above" >&2
      exit 1
    fi
    exec "$@"' "${name}" "$@"
}
