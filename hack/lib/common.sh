#!/usr/bin/env bash
# Shared helpers for the hack/ scripts: repository paths, logging, pinned versions.
# Source it; it does not change shell options of the caller.
# The variables are used by the scripts that source this file.
# shellcheck disable=SC2034

# Repository root (this file lives in hack/lib/).
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export REPO_ROOT

OUTPUT_DIR="${REPO_ROOT}/_output"
BIN_DIR="${OUTPUT_DIR}/bin"
TOOLS_DIR="${REPO_ROOT}/hack/tools"
# The e2e suite's test of 1,000-replica jobs: make test-chaos runs it alone
# on its stack, and a whole make test-e2e leaves it out.
# shellcheck disable=SC2034 # used by the scripts that source this file
WIDE_E2E_TEST='^TestEveryKindAtTheReplicaCapMakesSmallPods$'

# Every build and test compiles with -trimpath, as the binaries and images
# are built: one build cache entry per package instead of two, which saves
# minutes of a cold build (the Makefile sets the same).
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="-trimpath${GOFLAGS:+ ${GOFLAGS}}" ;;
esac
# Without DWARF too (the Makefile says why); DBG=1 keeps it for a debugger.
if [[ "${DBG:-0}" != 1 ]]; then
  case " ${GOFLAGS} " in
    *" -gcflags=all=-dwarf=false "*) ;;
    *) export GOFLAGS="${GOFLAGS} -gcflags=all=-dwarf=false" ;;
  esac
fi
# And without cgo, as the test binaries, images and releases are built: a
# package compiled with cgo (net, os/user, and all that imports them) is a
# second compilation of the same source. The tools modules build their shared
# libraries at the main module's versions for the same reason (hack/alignmodules).
export CGO_ENABLED="${CGO_ENABLED:-0}"

# Pinned versions of the test binaries. The tools modules under hack/tools pin
# the same versions; change both together.
KUBE_VERSION="v1.37.1"
ETCD_VERSION="v3.7.0"
KWOK_VERSION="v0.8.0"
# sigs.k8s.io/scheduler-plugins: the second scheduler (coscheduling) of the local stack.
SCHEDULER_PLUGINS_VERSION="v0.32.7"
# sigs.k8s.io/kueue: job queueing and quota (ClusterQueue, LocalQueue, Workload) of the local stack.
KUEUE_VERSION="v0.19.2"
# The real nodes of the local stack (hack/build-node-binaries.sh, internal/localcluster/spec/nodes.go).
CONTAINERD_VERSION="v2.3.4"
RUNC_VERSION="v1.4.3"
COREDNS_VERSION="v1.13.1"
CNI_PLUGINS_VERSION="v1.8.0"
# The real node's registry (CNCF Distribution) and storage (local-path-provisioner).
REGISTRY_VERSION="v3.1.2"
LOCAL_PATH_PROVISIONER_VERSION="v0.0.30"
# Helm lints and renders the chart (artifacts/charts/training) and installs it in the install test.
HELM_VERSION="v3.22.0"
# github.com/prometheus/prometheus: a real Prometheus for the monitoring e2e test and promtool for the alert rules' unit tests.
PROMETHEUS_VERSION="v0.316.0"

# log prints a timestamped progress line on stderr.
# It never fails: a closed stderr (say, a pipe whose reader died on Ctrl-C)
# must not abort a script that is stopping processes.
log() {
  printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2 2>/dev/null || true
}

# die prints an error and exits non-zero.
die() {
  printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2
  exit 1
}

# go_mod_cache prints the module cache directory.
go_mod_cache() {
  local dir
  dir="$(go env GOMODCACHE)"
  [[ -n "${dir}" ]] || die "cannot determine the Go module cache (go env GOMODCACHE)"
  printf '%s\n' "${dir}"
}

# go_test SUITE [go test flags and packages...] runs go test through hack/gotest: go test's usual output, then
# the counts (run, passed, failed, skipped, the slowest tests), which make test's last table adds up per phase.
# Returns go test's exit code.
go_test() {
  local suite="$1"
  shift
  # Under a lock: make test's lanes run suites side by side, and two must not write the program at once.
  mkdir -p "${OUTPUT_DIR}/tools"
  (cd "${REPO_ROOT}" && flock "${OUTPUT_DIR}/tools/.gotest.lock" go build -o "${OUTPUT_DIR}/tools/gotest" ./hack/gotest) ||
    return
  "${OUTPUT_DIR}/tools/gotest" -suite "${suite}" -- "$@"
}
