#!/usr/bin/env bash
# The release installed for real (make test-install): builds two releases
# of this commit (A and B, differing in version) for the machine's own
# architecture, checks a rebuild of A is identical, starts a local stack of
# its own without our host processes (LOCAL_SKIP_TRAINING=1) but with the real
# node, its registry and its StorageClass, pushes both releases' images to the
# registry, and runs go test ./test/install: install A as Pods from
# install.yaml, train, upgrade to B under load, faults, uninstall. It stops
# the stack afterwards and fails when the real node left anything on the host
# (localcluster run, whose command is this script again, with --in-stack).
#
# Where the real node cannot run (not root, no cgroup v1, ...) it says so
# and skips: an installation is only shown on real nodes. Under CI=true or
# REQUIRE_REAL_NODES=1 that is a failure instead.
#
# The tests get INSTALL_RELEASE_A/B (release directories), INSTALL_REGISTRY
# (host:port), KUBECONFIG and KUBECTL.
# Extra go test flags: INSTALL_GO_TEST_FLAGS (e.g. "-v").
set -euo pipefail

# One real node: the Helm step restores etcd from a snapshot on a claim that
# every member mounts, and the local stack's only storage, local-path, is
# ReadWriteOnce. On two nodes the members' topology spread (maxSkew 1 on the
# host name) and the claim's pin to one node leave two members unschedulable,
# as docs/install.md says of ReadWriteOnce (the install, upgrade and fault
# steps do pass on two).
export LOCAL_REAL_NODES="${LOCAL_REAL_NODES:-1}"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LOCAL_DIR="${LOCAL_DIR:-_output/li}"
export LOCAL_SKIP_TRAINING=1
export LOCAL_KUEUE="${LOCAL_KUEUE:-0}"
export LOCAL_SCHEDULER_PLUGINS="${LOCAL_SCHEDULER_PLUGINS:-0}"
export LOCAL_FAKE_NODES="${LOCAL_FAKE_NODES:-1}"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"
# shellcheck source=hack/lib/packages.sh
source "${HACK_DIR}/lib/packages.sh"

releases="${OUTPUT_DIR}/install-test"

if [[ "${1:-}" == --in-stack ]]; then
  # On the stack, as localcluster run's command, with the stack's environment
  # (KUBECONFIG, LOCAL_DIR and its settings).
  if ! real_node_running; then
    die "the install test stack has no real node (see above)"
  fi
  start=${SECONDS}
  for v in a b; do
    while read -r name _ _; do
      registry_push "${releases}/${v}/images/${name}.tar" "tensorstack/${name}" >/dev/null
    done <"${releases}/${v}/images/images.txt"
  done
  log "pushed releases a and b to the registry ${LOCAL_REGISTRY} in $((SECONDS - start))s"

  cd "${REPO_ROOT}"
  export KUBECTL="${BIN_DIR}/kubectl" HELM="${BIN_DIR}/helm" ETCDCTL="${BIN_DIR}/etcdctl"
  export INSTALL_RELEASE_A="${releases}/a" INSTALL_RELEASE_B="${releases}/b" INSTALL_REGISTRY="${LOCAL_REGISTRY}"
  # shellcheck disable=SC2086 # word splitting of the extra flags is intended
  set -- ${INSTALL_GO_TEST_FLAGS:-}
  log "running go test -count=1 -timeout 30m $* ./test/install/..."
  rc=0
  go_test install -count=1 -timeout 30m "$@" ./test/install/... || rc=$?
  log "go test exited with ${rc}"
  exit "${rc}"
fi

# An installation is shown on a real node.
real_nodes_or_skip test-install
refuse_running_stack

arch="$(go env GOARCH)"
export RELEASE_IMAGE_PLATFORMS="linux/${arch}" RELEASE_PLUGIN_PLATFORMS="linux/${arch}"
start=${SECONDS}
for v in a b; do
  RELEASE_DIR="${releases}/${v}" "${HACK_DIR}/release.sh" "v0.0.0-install.${v}"
done
# Reproducible: the same commit gives the same release, byte for byte.
RELEASE_DIR="${releases}/a-again" "${HACK_DIR}/release.sh" v0.0.0-install.a
if ! diff -u "${releases}/a/checksums.txt" "${releases}/a-again/checksums.txt" >&2; then
  die "two builds of release v0.0.0-install.a differ (checksums above)"
fi
log "a rebuild of release v0.0.0-install.a is identical ($(wc -l <"${releases}/a/checksums.txt") files, $(grep -c . "${releases}/a/images/images.txt") images; the releases built in $((SECONDS - start))s)"
rm -rf "${releases}/a-again"

require_stack_packages
localcluster run -- "${HACK_DIR}/test-install.sh" --in-stack
