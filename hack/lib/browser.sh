#!/usr/bin/env bash
# What the dashboard's browser test and its benchmark share: a kwok-only stack
# that stores progress reports often, and a browser to drive. Sourced
# after hack/lib/common.sh, before hack/lib/local.sh (the settings are read
# there).

# browser_stack_settings OFFSET [INTERVAL]: the stack's settings, where the
# environment does not set them: what the pages do not need is left out for a
# quicker start (Kueue stays: the Queues page reads it), the ports move by
# OFFSET, and progress reports are stored once per INTERVAL at most (1s), not
# every five, so that a report a second is charted.
browser_stack_settings() {
  export LOCAL_REAL_NODE="${LOCAL_REAL_NODE:-0}"
  export LOCAL_KUEUE="${LOCAL_KUEUE:-1}"
  export LOCAL_SCHEDULER_PLUGINS="${LOCAL_SCHEDULER_PLUGINS:-0}"
  export LOCAL_GANG_WORKLOAD="${LOCAL_GANG_WORKLOAD:-0}"
  export LOCAL_PORT_OFFSET="${LOCAL_PORT_OFFSET:-$1}"
  export LOCAL_TRAINING_APISERVER_EXTRA_ARGS="${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:-} --progress-write-interval=${2:-1s}"
}

# require_browser PURPOSE: Debian's Chromium (installed when run as root),
# Node.js, and the front end built, with playwright-core among its packages.
require_browser() {
  require_packages "$1" chromium:/usr/bin/chromium
  command -v node >/dev/null 2>&1 || die "$1 needs Node.js"
  make -C "${REPO_ROOT}" --no-print-directory dashboard
}
