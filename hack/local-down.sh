#!/usr/bin/env bash
# Stops the local stack started by hack/local-up.sh, in reverse start order
# (etcd last, so kube-apiserver can shut down cleanly), then removes what the
# real nodes made on the machine: namespaces, mounts, cgroups, iptables
# rules; and puts back the sysctls their kubelets changed. It also stops
# stray processes of this checkout left from an earlier run. State and logs
# in _output/local are kept for inspection; the next start wipes them.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

if (($#)); then
  die "usage: $0 (no arguments)"
fi
localcluster down
