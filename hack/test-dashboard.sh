#!/usr/bin/env bash
# The dashboard in a real browser (make test-dashboard): starts a local stack of its own (kwok nodes only, beside
# any other stack: LOCAL_DIR _output/local-dashboard, ports moved by LOCAL_PORT_OFFSET, 3000 by default), runs
# pkg/dashboard/ui/test/dashboard.test.mjs with node --test against kubectl training dashboard on it, in Debian's
# Chromium driven by playwright-core, and always stops the stack. Exits with the test's code.
#
# Needs _output/bin/kubectl-training built with the front end (make build does both), the stack's binaries
# (make stack-binaries), Node.js, and Debian's chromium, which it installs when run as root.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/browser.sh
source "${HACK_DIR}/lib/browser.sh"
browser_stack_settings 3000
export LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local-dashboard}"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

require_browser "the dashboard's browser test"

cd "${REPO_ROOT}"
export REPO_ROOT
# The UI's own unit tests first: no browser, no stack.
node --test --test-reporter=spec pkg/dashboard/ui/test/unit/
localcluster run -- node --test --test-reporter=spec pkg/dashboard/ui/test/dashboard.test.mjs
