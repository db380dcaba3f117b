#!/usr/bin/env bash
# The dashboard in a real browser (make test-dashboard): starts a local stack of its own (kwok nodes only, beside
# any other stack: LOCAL_DIR _output/local-dashboard, ports moved by LOCAL_PORT_OFFSET, 3000 by default), runs
# pkg/dashboard/ui/test/dashboard.test.mjs with node --test against kubectl training dashboard on it, in Debian's
# Chromium driven by playwright-core, and always stops the stack. Exits with the test's code.
#
# Needs _output/bin/kubectl-training built with the front end (make build does both), the stack's binaries
# (make stack-binaries), Node.js, and Debian's chromium, which it installs when run as root.
set -euo pipefail

# What the test does not need, left out for a quicker start.
export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
export LOCAL_KUEUE="${LOCAL_KUEUE:-0}"
export LOCAL_SCHEDULER_PLUGINS="${LOCAL_SCHEDULER_PLUGINS:-0}"
export LOCAL_GANG_WORKLOAD="${LOCAL_GANG_WORKLOAD:-0}"
export LOCAL_PORT_OFFSET="${LOCAL_PORT_OFFSET:-3000}"
# Progress reports stored once a second at most, not every five: the test
# reports a step a second and charts each.
export LOCAL_TRAINING_APISERVER_EXTRA_ARGS="${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:-} --progress-write-interval=1s"

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
export LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local-dashboard}"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

require_packages "the dashboard's browser test" chromium:/usr/bin/chromium
command -v node >/dev/null 2>&1 || die "the dashboard's browser test needs Node.js"
# playwright-core comes with the front end's packages.
make -C "${REPO_ROOT}" --no-print-directory dashboard

cd "${REPO_ROOT}"
export REPO_ROOT
localcluster run -- node --test --test-reporter=spec pkg/dashboard/ui/test/dashboard.test.mjs
