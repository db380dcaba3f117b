#!/usr/bin/env bash
# The local stack, for the scripts: its paths, its settings, and the helpers
# they share. The stack itself is the Go program hack/localcluster
# (internal/localcluster): it starts, checks and stops every component; this file
# builds it, runs it, and reads the stack's state through it. Sourced after
# hack/lib/common.sh.
#
# Why some of it stays in bash: the scripts that wrap the stack (tests,
# benchmarks, installs) are bash, and these helpers are the few lines they
# share: running kubectl against the stack, waiting for a condition, reading
# the settings into variables.
#
# State lives under _output/local (LOCAL_DIR):
#   state.json            what the stack is: its settings, real nodes, components
#   kubeconfig            admin kubeconfig (system:masters)
#   pki/                  CAs, certificates, keys, per-component kubeconfigs
#   logs/<component>.log  output of each component
#   pids/<component>.pid  process ids
#   etcd/, training-etcd/ data directories
#   config/               generated configuration
#   nodes/<node>/         each real node's containerd, kubelet and configuration
# shellcheck disable=SC2034

# LOCAL_DIR (environment) puts a second stack beside the default one, with
# other LOCAL_*_PORT values; a relative path is taken from the repository root.
LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local}"
[[ "${LOCAL_DIR}" == /* ]] || LOCAL_DIR="${REPO_ROOT}/${LOCAL_DIR}"
export LOCAL_DIR
LOCAL_PKI_DIR="${LOCAL_DIR}/pki"
LOCAL_LOG_DIR="${LOCAL_DIR}/logs"
LOCAL_PID_DIR="${LOCAL_DIR}/pids"
LOCAL_CONFIG_DIR="${LOCAL_DIR}/config"
LOCAL_KUBECONFIG="${LOCAL_DIR}/kubeconfig"
LOCAL_STATE_FILE="${LOCAL_DIR}/state.json"
LOCAL_HACK_DIR="${REPO_ROOT}/hack/local"
LOCALCLUSTER="${BIN_DIR}/localcluster"

TRAINING_NAMESPACE="tensorstack-system"
TRAINING_SERVICE="training-apiserver"
TRAINING_APISERVICE="v1beta1.batch.tensorstack.dev"
KUEUE_NAMESPACE="kueue-system"
MULTIKUEUE_WORKER_DIR="${LOCAL_DIR}-worker"

# localcluster ARGS...: runs the stack's program, built first (go build does
# nothing when it is up to date). Under a lock: make builds its binaries two
# at a time, and two scripts must not write the program at once, nor run it
# half written.
localcluster() {
  mkdir -p "${BIN_DIR}"
  (cd "${REPO_ROOT}" && flock "${BIN_DIR}/.localcluster.lock" go build -o "${LOCALCLUSTER}" ./hack/localcluster) ||
    die "building hack/localcluster failed"
  REPO_ROOT="${REPO_ROOT}" "${LOCALCLUSTER}" "$@"
}

# The settings: from the environment, with the program's defaults for what
# is unset (the one table of them is internal/localcluster/spec/settings.go).
eval "$(localcluster settings)"

# load_settings replaces them with the running stack's (state.json), if one
# runs; it also sets LOCAL_REAL_NODES_RUNNING, LOCAL_REAL_NODE_RUNNING and
# LOCAL_REAL_NODE_NAMES.
load_settings() {
  if [[ -f "${LOCAL_STATE_FILE}" ]]; then
    eval "$(localcluster env)"
    LOCAL_REGISTRY="127.0.0.1:${LOCAL_REGISTRY_PORT}"
  fi
}

# Its discovery cache is the stack's own: the stack runs kubectl before the
# training-apiserver serves, and a cache written then would keep the
# trainingjobs category from users' and tests' kubectl for hours.
kubectl_local() {
  "${BIN_DIR}/kubectl" --kubeconfig="${LOCAL_KUBECONFIG}" --cache-dir="${LOCAL_DIR}/kubectl-cache" "$@"
}

training_enabled() { [[ "${LOCAL_SKIP_TRAINING}" != 1 ]]; }
gang_workload_enabled() { [[ "${LOCAL_GANG_WORKLOAD}" == 1 ]]; }
scheduler_plugins_enabled() { [[ "${LOCAL_SCHEDULER_PLUGINS}" == 1 ]]; }
kueue_enabled() { [[ "${LOCAL_KUEUE}" == 1 ]]; }
multikueue_enabled() { [[ "${LOCAL_MULTIKUEUE}" == 1 ]] && kueue_enabled && training_enabled; }
real_node_enabled() { [[ "${LOCAL_REAL_NODE}" == 1 ]]; }
# real_node_running: the running stack has real nodes (after load_settings).
real_node_running() { [[ "${LOCAL_REAL_NODE_RUNNING:-0}" == 1 ]]; }

# node_cannot_run prints why real nodes cannot run here and succeeds; fails
# when they can.
node_cannot_run() {
  local why
  why="$(localcluster why-no-real-node)"
  [[ -n "${why}" ]] && printf '%s\n' "${why}"
}

# real_nodes_or_skip SUITE returns where real nodes run. Elsewhere it ends the script: with 0 after saying why
# and noting the skip for make test's last lines, or under CI=true or REQUIRE_REAL_NODES=1 with 1, naming the
# reason (the rule is internal/skips, the reason internal/localcluster's WhyNoRealNodes).
real_nodes_or_skip() {
  local skipped
  skipped="$(localcluster real-nodes-or-skip "$1")" || exit 1
  [[ -n "${skipped}" ]] || return 0
  log "${skipped}"
  exit 0
}

# running_components prints the stack's processes that run.
running_components() {
  localcluster running
}

# refuse_running_stack: a stack someone else started is theirs. The scripts
# that start one of their own (localcluster run) refuse before their setup,
# as localcluster up would after it.
refuse_running_stack() {
  local running
  running="$(running_components | tr '\n' ' ')"
  if [[ -n "${running// /}" ]]; then
    die "a local control plane is already running in ${LOCAL_DIR#"${REPO_ROOT}/"} (${running% }); stop it first with hack/local-down.sh (make local-down)"
  fi
}

# component_pid NAME prints the pid of a running component, if any.
component_pid() {
  local pid
  pid="$(cat "${LOCAL_PID_DIR}/$1.pid" 2>/dev/null)" || return 1
  pid_alive "${pid}" || return 1
  echo "${pid}"
}

# pid_alive PID succeeds when the process exists and is not a zombie.
pid_alive() {
  local pid="$1" stat state
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  { read -r stat <"/proc/${pid}/stat"; } 2>/dev/null || return 1
  state="${stat##*) }"
  state="${state%% *}"
  [[ "${state}" != "Z" && "${state}" != "X" ]]
}

# stop_pid NAME PID TIMEOUT: SIGTERM, then SIGKILL after TIMEOUT seconds.
stop_pid() {
  local name="$1" pid="$2" timeout="$3" deadline
  deadline=$((SECONDS + timeout))
  kill -TERM "${pid}" 2>/dev/null || true
  while pid_alive "${pid}"; do
    if ((SECONDS >= deadline)); then
      log "${name} (pid ${pid}) did not exit within ${timeout}s of SIGTERM; sending SIGKILL"
      kill -KILL "${pid}" 2>/dev/null || true
      deadline=$((SECONDS + 5))
      while pid_alive "${pid}" && ((SECONDS < deadline)); do sleep 0.1; done
      break
    fi
    sleep 0.1
  done
  wait "${pid}" 2>/dev/null || true
}

# port_in_use PORT succeeds when something listens on TCP PORT (any address).
port_in_use() {
  local port="$1"
  if command -v ss >/dev/null 2>&1; then
    [[ -n "$(ss -Hltn "sport = :${port}" 2>/dev/null)" ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null
  fi
}

# wait_until NAME WHAT TIMEOUT COMMAND...: retries COMMAND until it succeeds.
# Fails early, with the end of its log, when component NAME has exited.
wait_until() {
  local name="$1" what="$2" timeout="$3"
  shift 3
  local start=${SECONDS} pid
  log "waiting for ${what} (up to ${timeout}s)"
  while true; do
    if "$@" >/dev/null 2>&1; then
      log "${what}: ok after $((SECONDS - start))s"
      return 0
    fi
    if [[ -n "${name}" ]]; then
      pid="$(cat "${LOCAL_PID_DIR}/${name}.pid" 2>/dev/null || true)"
      if ! pid_alive "${pid}"; then
        show_log_tail "${name}"
        die "${name} exited while waiting for ${what}; see ${LOCAL_LOG_DIR#"${REPO_ROOT}/"}/${name}.log"
      fi
    fi
    if ((SECONDS - start >= timeout)); then
      show_log_tail "${name}"
      die "timed out after ${timeout}s waiting for ${what}"
    fi
    sleep 0.5
  done
}

show_log_tail() {
  local name="$1" log
  [[ -n "${name}" ]] || return 0
  log="${LOCAL_LOG_DIR}/${name}.log"
  [[ -f "${log}" ]] || return 0
  echo "---- last lines of ${log#"${REPO_ROOT}/"} ----" >&2
  tail -n 25 "${log}" >&2
  echo "----" >&2
}

apiservice_available() {
  [[ "$(kubectl_local get apiservice "${TRAINING_APISERVICE}" \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" == "True" ]]
}

# shellcheck source=hack/lib/images.sh
source "${REPO_ROOT}/hack/lib/images.sh"
# shellcheck source=hack/lib/registry.sh
source "${REPO_ROOT}/hack/lib/registry.sh"
