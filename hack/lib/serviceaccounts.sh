#!/usr/bin/env bash
# Runs our two components on the local stack as the ServiceAccounts that
# artifacts/deploy defines, with kube-apiserver writing an audit log, so tests
# show the installation's RBAC is enough (nothing refused) and no more than
# needed (every rule used). Sourced after hack/lib/common.sh and local.sh;
# call use_service_account_identities before hack/local-up.sh starts a stack.

# use_service_account_identities DIR
# Writes a kubeconfig per component into DIR and exports the local-up
# settings that use them. Exports SERVICE_ACCOUNT_AUDIT_LOG, the audit log,
# for the tests on the stack.
use_service_account_identities() {
  local dir="$1"
  mkdir -p "${dir}"
  export SERVICE_ACCOUNT_AUDIT_LOG="${LOCAL_LOG_DIR}/kube-apiserver-audit.log"

  local apiserver_kc="${dir}/training-apiserver.kubeconfig"
  local controller_kc="${dir}/training-controller-manager.kubeconfig"
  write_service_account_kubeconfig "${apiserver_kc}" training-apiserver rbac-apiserver.yaml
  # With Kueue on the stack, the controller also gets the optional RBAC of
  # artifacts/deploy/components/kueue, as an installation next to Kueue would.
  local controller_rbac=(rbac-controller-manager.yaml)
  if kueue_enabled; then
    controller_rbac+=(../components/kueue/rbac-controller-manager-kueue.yaml)
  fi
  write_service_account_kubeconfig "${controller_kc}" training-controller-manager "${controller_rbac[@]}"

  export LOCAL_APISERVER_EXTRA_ARGS="--audit-policy-file=${REPO_ROOT}/test/deploy/testdata/kube-apiserver-audit-policy.yaml --audit-log-path=${SERVICE_ACCOUNT_AUDIT_LOG} --audit-log-format=json --enable-admission-plugins=OwnerReferencesPermissionEnforcement ${LOCAL_APISERVER_EXTRA_ARGS:-}"
  export LOCAL_TRAINING_APISERVER_EXTRA_ARGS="--kubeconfig=${apiserver_kc} --authentication-kubeconfig=${apiserver_kc} --authorization-kubeconfig=${apiserver_kc} ${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:-}"
  export LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS="--kubeconfig=${controller_kc} --leader-elect=true ${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:-}"
  # Informers then list before they watch, as against servers without
  # streaming lists, so the audit log shows the list rules in use too.
  export KUBE_FEATURE_WatchListClient=false
}

# write_service_account_kubeconfig FILE SERVICE_ACCOUNT RBAC_FILE [RBAC_FILE...]
# (RBAC files relative to artifacts/deploy/base)
write_service_account_kubeconfig() {
  local file="$1" account="$2" rbac
  shift 2
  rbac="$(printf ', "%s"' "$@")"
  cat >"${file}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:${LOCAL_APISERVER_PORT}
    certificate-authority: ${LOCAL_PKI_DIR}/ca.crt
users:
- name: ${account}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ${REPO_ROOT}/hack/local/serviceaccount-credential.sh
      args: ["${BIN_DIR}/kubectl", "${LOCAL_KUBECONFIG}", "${account}"${rbac}]
      interactiveMode: Never
contexts:
- name: local
  context:
    cluster: local
    user: ${account}
current-context: local
EOF
  chmod 600 "${file}"
}
