#!/usr/bin/env bash
# The local stack's StorageClass with dynamic provisioning: Rancher's
# local-path-provisioner (component local-path-provisioner, built from
# hack/tools/local-path-provisioner) runs on the host with its own client
# certificate and makes PersistentVolumes in directories of the real node
# (_output/local/node/volumes). It creates and removes those directories
# with helper pods on the node, running the local stack's training image
# (it has a shell, and is already there). StorageClass local-path, the
# cluster's default, binds when a pod is scheduled. Sourced by
# hack/lib/local.sh.
# shellcheck disable=SC2034

STORAGE_NAMESPACE="local-path-storage"
STORAGE_CLASS="local-path"
STORAGE_USER="system:local-path-provisioner"

storage_volumes_dir() {
  printf '%s/volumes\n' "${NODE_DIR}"
}

# generate_storage_config writes the provisioner's configuration, and the
# objects it works with: its namespace, the helper pods' ServiceAccount, the
# ConfigMap with the helper pod's template and scripts, the StorageClass.
generate_storage_config() {
  local volumes
  volumes="$(storage_volumes_dir)"
  mkdir -p "${volumes}"
  cat >"${LOCAL_CONFIG_DIR}/local-path-provisioner.json" <<EOF2
{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["${volumes}"]}]}
EOF2
  sed -e "s|@NAMESPACE@|${STORAGE_NAMESPACE}|g" -e "s|@STORAGE_CLASS@|${STORAGE_CLASS}|g" \
    -e "s|@HELPER_IMAGE@|${TRAINING_IMAGE}|g" -e "s|@VOLUMES@|${volumes}|g" \
    "${LOCAL_HACK_DIR}/local-path-storage.yaml" >"${LOCAL_CONFIG_DIR}/local-path-storage.yaml"
}

# install_storage creates what generate_storage_config described.
install_storage() {
  log "creating StorageClass ${STORAGE_CLASS} (the default; local-path-provisioner, volumes in $(storage_volumes_dir | sed "s|^${REPO_ROOT}/||"))"
  kubectl_local apply -f "${LOCAL_CONFIG_DIR}/local-path-storage.yaml" >/dev/null
}

# storage_provisioner_ready succeeds once the provisioner has taken its
# leader lease, so claims are being watched.
storage_provisioner_ready() {
  grep -q "successfully acquired lease\|Starting provisioner controller" "${LOCAL_LOG_DIR}/local-path-provisioner.log" 2>/dev/null
}
