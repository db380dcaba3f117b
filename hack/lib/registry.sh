#!/usr/bin/env bash
# The local stack's image registry: CNCF Distribution (component registry,
# built from hack/tools/registry) on 127.0.0.1:LOCAL_REGISTRY_PORT, storing
# in _output/local/registry. It runs with the real node: nodeproxy makes the
# same address reach it from inside the node's network namespace, and the
# node's containerd pulls from it over plain HTTP (hosts.toml written by
# node_generate_configs). Pods whose images are all under LOCAL_REGISTRY
# run on the real node (hack/local/real-node.yaml). Sourced by
# hack/lib/local.sh.
# shellcheck disable=SC2034

: "${LOCAL_REGISTRY_PORT:=15000}"
# Image references of the local registry start with this.
LOCAL_REGISTRY="127.0.0.1:${LOCAL_REGISTRY_PORT}"

# generate_registry_config writes the registry's configuration.
generate_registry_config() {
  mkdir -p "${LOCAL_DIR}/registry"
  cat >"${LOCAL_CONFIG_DIR}/registry.yaml" <<EOF2
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${LOCAL_DIR}/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:${LOCAL_REGISTRY_PORT}
  # Served on loopback only; the node reaches it through nodeproxy.
  secret: local-registry-$(printf '%s' "${LOCAL_DIR}" | sha256sum | cut -c1-16)
EOF2
}

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
