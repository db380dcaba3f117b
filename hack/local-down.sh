#!/usr/bin/env bash
# Stops the local control plane started by hack/local-up.sh, in reverse start
# order: training-controller-manager, training-apiserver, kwok, kueue, scheduler-plugins,
# kube-scheduler, kube-controller-manager, kube-apiserver, etcd (last, so kube-apiserver can
# shut down cleanly). Uses the pid files in _output/local/pids and also stops
# stray processes of this checkout left from an earlier run. State and logs in
# _output/local are kept for inspection; the next local-up wipes them.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

if (($#)); then
  die "usage: $0 (no arguments)"
fi

stop_all

left="$(running_components | tr '\n' ' ')"
if [[ -n "${left// /}" ]]; then
  die "still running after stop: ${left% }"
fi
