#!/usr/bin/env bash
# The local stack's image registry (CNCF Distribution on
# 127.0.0.1:LOCAL_REGISTRY_PORT, component registry of internal/localcluster),
# which runs with the real nodes: pushing a release's images to it and
# installing from it. Pods whose images are all under LOCAL_REGISTRY run on
# the real nodes (hack/local/real-node.yaml). Sourced by hack/lib/local.sh.
# shellcheck disable=SC2034

# Image references of the local registry start with this.
LOCAL_REGISTRY="127.0.0.1:${LOCAL_REGISTRY_PORT}"

# registry_ready succeeds once the registry answers the API's base endpoint.
registry_ready() {
  curl -fsS --max-time 5 "http://${LOCAL_REGISTRY}/v2/" >/dev/null
}

# registry_push ARCHIVE REPOSITORY: pushes an OCI archive (hack/images/builder)
# to LOCAL_REGISTRY/REPOSITORY and prints the pushed reference, with its
# digest.
registry_push() {
  "${IMAGE_BUILDER}" push -archive "$1" -to "${LOCAL_REGISTRY}/$2"
}

# registry_install_yaml FILE prints a release's install.yaml with its images
# taken from the local registry, as docs/install.md says to install from a
# registry of one's own (the digests stay).
registry_install_yaml() {
  sed "s#${PRODUCT_IMAGE_REPOSITORY}/#${LOCAL_REGISTRY}/tensorstack/#" "$1"
}
