#!/usr/bin/env bash
# Stops and/or starts one component of the running local stack with the
# flags and settings it was started with (state.json; hack/localcluster set
# changes them), then waits until it is ready again. Meant for end-to-end
# tests (crash and restart scenarios) and for picking up a rebuilt binary
# (make build). A stack in the foreground (make run) stays up meanwhile.
#
# Usage: hack/local-restart.sh [--stop|--start|--freeze|--thaw|--kill] COMPONENT
#   (no option)  stop it if running, start it, wait until ready
#   --stop       stop it only
#   --start      start it (must not be running), wait until ready
#   --freeze     stop it where it stands (SIGSTOP): it stops answering while
#                its connections stay open, as a machine cut off
#   --thaw       let a frozen one go on (SIGCONT)
#   --kill       kill it (SIGKILL, no clean shut-down), start it again, wait
# COMPONENT: any process of the stack (hack/localcluster components lists
#   them), e.g. training-apiserver, training-controller-manager, kwok, kueue,
#   kube-scheduler, kube-apiserver, etcd; kubelet-<node> (kubelet alone: the
#   first real node's), whose containers keep running while it is stopped, as
#   on a node that lost its kubelet or its network
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

case "${1:-}" in
  -h | --help | "") die "usage: $0 [--stop|--start|--freeze|--thaw|--kill] COMPONENT" ;;
esac
localcluster restart "$@"
