#!/usr/bin/env bash
# Installs a release of this checkout into the running local stack (make
# local-up or make run), the way a cluster gets it: builds the release for
# this machine's architecture (hack/release.sh, version v0.0.0-local), pushes
# its images to the stack's registry, stops the stack's own host processes
# (training-apiserver, training-controller-manager) and their APIService, and
# applies install.yaml: the product then runs as Pods on the real node.
# hack/local-uninstall.sh (make local-uninstall) undoes it.
#
# Needs the stack's real node (its registry and StorageClass come with it).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

load_settings
[[ -n "$(running_components | tr -d '\n')" ]] || die "no local stack runs; start one with make local-up"
real_node_running || die "the local stack runs no real node; the installation runs as Pods on it (see the README's real node section)"
registry_ready || die "the stack's registry does not answer on ${LOCAL_REGISTRY}"

version="v0.0.0-local"
release="${OUTPUT_DIR}/local-release"
RELEASE_DIR="${release}" RELEASE_IMAGE_PLATFORMS="linux/$(go env GOARCH)" RELEASE_PLUGIN_PLATFORMS="linux/$(go env GOARCH)" \
  "${HACK_DIR}/release.sh" "${version}"
while read -r name _ _; do
  registry_push "${release}/images/${name}.tar" "tensorstack/${name}" >/dev/null
done <"${release}/images/images.txt"
log "pushed the images to ${LOCAL_REGISTRY}"

# The stack's own training-apiserver is reached through an ExternalName
# Service of the installation's name; both go before the installation takes
# the name.
for c in training-controller-manager training-apiserver; do
  if component_pid "${c}" >/dev/null; then
    "${HACK_DIR}/local-restart.sh" --stop "${c}"
  fi
done
kubectl_local delete apiservice "${TRAINING_APISERVICE}" --ignore-not-found >/dev/null
kubectl_local -n "${TRAINING_NAMESPACE}" delete service "${TRAINING_SERVICE}" --ignore-not-found >/dev/null

start=${SECONDS}
registry_install_yaml "${release}/install.yaml" |
  kubectl_local apply --server-side --force-conflicts -f - >/dev/null
wait_until "" "APIService ${TRAINING_APISERVICE} Available (the installation's pods)" 600 apiservice_available
log "installed ${version} in $((SECONDS - start))s: kubectl -n ${TRAINING_NAMESPACE} get pods; make local-uninstall undoes it"
