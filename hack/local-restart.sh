#!/usr/bin/env bash
# Stops and/or starts one component of the running local control plane with
# the same flags and settings hack/local-up.sh used, then waits until it is
# ready again. Meant for end-to-end tests (crash/restart scenarios) and for
# picking up a rebuilt binary (make build) during development.
#
# Usage: hack/local-restart.sh [--stop|--start] COMPONENT
#   (no option)  stop it if running, start it, wait until ready
#   --stop       stop it only
#   --start      start it (must not be running), wait until ready
# COMPONENT: training-apiserver, training-controller-manager, kwok, kueue,
#   scheduler-plugins, kube-scheduler, kube-controller-manager, kube-apiserver, etcd;
#   kubelet, the real node's (its containers keep running while it is stopped,
#   as on a node that lost its kubelet or its network)
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

usage() {
  die "usage: $0 [--stop|--start] training-apiserver|training-controller-manager|kwok|kueue|scheduler-plugins|kube-scheduler|kube-controller-manager|kube-apiserver|etcd|kubelet"
}

mode=restart
case "${1:-}" in
  --stop) mode=stop; shift ;;
  --start) mode=start; shift ;;
  -h | --help | "") usage ;;
esac
(($# == 1)) || usage
name="$1"
[[ " ${LOCAL_COMPONENTS[*]} kubelet " == *" ${name} "* ]] || usage

[[ -f "${LOCAL_ENV_FILE}" ]] || die "no local control plane state in ${LOCAL_DIR#"${REPO_ROOT}/"}; start one with hack/local-up.sh"
load_settings
if [[ "${name}" == kubelet ]]; then
  real_node_running || die "this stack runs no real node"
  if [[ "${mode}" != start ]] && ! node_stop kubelet; then
    log "kubelet was not running"
  fi
  if [[ "${mode}" != stop ]]; then
    pid="$(cat "$(node_pid_file kubelet)" 2>/dev/null || true)"
    if pid_alive "${pid}"; then
      die "kubelet is already running (pid ${pid})"
    fi
    node_start_kubelet
    node_wait kubelet "node ${NODE_NAME} Ready" node_ready
  fi
  exit 0
fi
if [[ "${name}" == training-* ]] && ! training_enabled; then
  die "${name} is not part of this stack (it was started with LOCAL_SKIP_TRAINING=${LOCAL_SKIP_TRAINING})"
fi
if [[ "${name}" == scheduler-plugins ]] && ! scheduler_plugins_enabled; then
  die "${name} is not part of this stack (it was started with LOCAL_SCHEDULER_PLUGINS=${LOCAL_SCHEDULER_PLUGINS})"
fi
if [[ "${name}" == kueue ]] && ! kueue_enabled; then
  die "${name} is not part of this stack (it was started with LOCAL_KUEUE=${LOCAL_KUEUE})"
fi

if [[ "${mode}" != start ]]; then
  if ! stop_component "${name}"; then
    log "${name} was not running"
  fi
fi
if [[ "${mode}" != stop ]]; then
  if pid="$(component_pid "${name}")"; then
    die "${name} is already running (pid ${pid})"
  fi
  check_ports_free "${name}"
  start_component "${name}"
  wait_component "${name}"
fi
