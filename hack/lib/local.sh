#!/usr/bin/env bash
# The local control plane: configuration, PKI layout, how each component is
# started, checked and stopped. Sourced by hack/local-up.sh, local-down.sh,
# local-restart.sh and test-e2e.sh (after hack/lib/common.sh and pki.sh).
#
# Everything listens on 127.0.0.1 only. State lives under _output/local:
#   kubeconfig            admin kubeconfig (system:masters)
#   env.sh                the settings the running stack was started with
#   pki/                  CAs, certificates, keys, per-component kubeconfigs
#   logs/<component>.log  output of each component
#   pids/<component>.pid  process ids
#   etcd/, training-etcd/ data directories
#   config/               generated configuration (kwok stages, schedulers, nodes, APIService,
#                         Kueue's configuration, CRDs, webhooks and queues)
#   kueue/certs/          Kueue's webhook serving certificate (copied from its Secret)

# LOCAL_DIR (environment) puts a second stack beside the default one, with
# other LOCAL_*_PORT values; a relative path is taken from the repository root.
LOCAL_DIR="${LOCAL_DIR:-${OUTPUT_DIR}/local}"
[[ "${LOCAL_DIR}" == /* ]] || LOCAL_DIR="${REPO_ROOT}/${LOCAL_DIR}"
LOCAL_PKI_DIR="${LOCAL_DIR}/pki"
LOCAL_LOG_DIR="${LOCAL_DIR}/logs"
LOCAL_PID_DIR="${LOCAL_DIR}/pids"
LOCAL_CONFIG_DIR="${LOCAL_DIR}/config"
LOCAL_KUBECONFIG="${LOCAL_DIR}/kubeconfig"
LOCAL_ENV_FILE="${LOCAL_DIR}/env.sh"
LOCAL_HACK_DIR="${REPO_ROOT}/hack/local"

# Settings. Each can be overridden from the environment; the values a stack
# was started with are saved in _output/local/env.sh for local-restart.sh.
LOCAL_SETTINGS=(
  LOCAL_ETCD_PORT LOCAL_ETCD_PEER_PORT LOCAL_APISERVER_PORT LOCAL_KCM_PORT
  LOCAL_SCHEDULER_PORT LOCAL_SCHEDULER_PLUGINS_PORT LOCAL_KWOK_PORT LOCAL_TRAINING_PORT
  LOCAL_TRAINING_METRICS_PORT LOCAL_TRAINING_METRICS_SECURE LOCAL_TRAINING_HEALTH_PORT LOCAL_FAKE_NODES LOCAL_NODE_CPU
  LOCAL_NODE_MEMORY LOCAL_NODE_PODS LOCAL_NODE_GPUS LOCAL_SKIP_TRAINING LOCAL_GANG_WORKLOAD
  LOCAL_SCHEDULER_PLUGINS LOCAL_KUEUE LOCAL_KUEUE_WEBHOOK_PORT LOCAL_KUEUE_METRICS_PORT
  LOCAL_KUEUE_HEALTH_PORT LOCAL_KUEUE_GPU_QUOTA LOCAL_KUEUE_PODS_READY_TIMEOUT LOCAL_KUEUE_V1BETA1 LOCAL_TIMEOUT
  LOCAL_APISERVER_EXTRA_ARGS LOCAL_TRAINING_APISERVER_EXTRA_ARGS LOCAL_TRAINING_APISERVER_ENV
  LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS LOCAL_REAL_NODE LOCAL_REAL_NODE_RUNNING LOCAL_REGISTRY_PORT
  LOCAL_MULTIKUEUE
)
: "${LOCAL_ETCD_PORT:=23790}"
: "${LOCAL_ETCD_PEER_PORT:=23791}"
: "${LOCAL_APISERVER_PORT:=16443}"
: "${LOCAL_KCM_PORT:=16257}"
: "${LOCAL_SCHEDULER_PORT:=16259}"
: "${LOCAL_SCHEDULER_PLUGINS_PORT:=16261}"
: "${LOCAL_KWOK_PORT:=16247}"
: "${LOCAL_TRAINING_PORT:=18443}"
: "${LOCAL_TRAINING_METRICS_PORT:=18080}"
# The controller's metrics over HTTPS with delegated authentication, as
# installed; 0 serves them over plain HTTP to anyone on 127.0.0.1.
: "${LOCAL_TRAINING_METRICS_SECURE:=1}"
: "${LOCAL_TRAINING_HEALTH_PORT:=18081}"
: "${LOCAL_FAKE_NODES:=10}"
: "${LOCAL_NODE_CPU:=1000}"
: "${LOCAL_NODE_MEMORY:=4Ti}"
: "${LOCAL_NODE_PODS:=500}"
: "${LOCAL_NODE_GPUS:=64}"
: "${LOCAL_SKIP_TRAINING:=}"
# Gang scheduling, both on by default (0 turns one off):
#   LOCAL_GANG_WORKLOAD      Kubernetes' own Workload API (scheduling.k8s.io/v1beta1
#                            Workload and PodGroup) and kube-scheduler's GangScheduling
#                            plugin: feature gate GenericWorkload on kube-apiserver,
#                            kube-controller-manager and kube-scheduler
#   LOCAL_SCHEDULER_PLUGINS  a second scheduler, scheduler-plugins' coscheduling
#                            (schedulerName scheduler-plugins-scheduler), and its
#                            PodGroup CRD scheduling.x-k8s.io/v1alpha1
: "${LOCAL_GANG_WORKLOAD:=1}"
: "${LOCAL_SCHEDULER_PLUGINS:=1}"
# Kueue (job queueing and quota), on by default (0 turns it off): component
# kueue, its CRDs (kueue.x-k8s.io), webhooks and the example queues of
# hack/local/kueue/queues.yaml, whose ClusterQueue cluster-queue has
# LOCAL_KUEUE_GPU_QUOTA nvidia.com/gpu. It lists TensorFlowTrainingJob and
# PyTorchTrainingJob as external frameworks, of its job integrations and of
# MultiKueue (hack/local/kueue/kueue-config.yaml). LOCAL_MULTIKUEUE=1 adds a
# worker cluster MultiKueue dispatches to (hack/lib/multikueue.sh).
# Its configuration is Kueue's default but for two settings:
#   LOCAL_KUEUE_PODS_READY_TIMEOUT  waitForPodsReady's timeout (on by default from
#                                   Kueue v0.19; 30m as Kueue's default; the e2e
#                                   tests shorten it, never switch it off)
#   LOCAL_KUEUE_V1BETA1             1 serves kueue.x-k8s.io/v1beta1 beside v1beta2, as
#                                   Kueue v0.19 ships; 0 marks it unserved in every
#                                   CRD, as Kueue v0.20 does (the e2e tests run so)
: "${LOCAL_KUEUE:=1}"
: "${LOCAL_KUEUE_WEBHOOK_PORT:=16263}"
: "${LOCAL_KUEUE_METRICS_PORT:=16264}"
: "${LOCAL_KUEUE_HEALTH_PORT:=16265}"
: "${LOCAL_KUEUE_GPU_QUOTA:=8}"
: "${LOCAL_KUEUE_PODS_READY_TIMEOUT:=30m}"
: "${LOCAL_KUEUE_V1BETA1:=1}"
: "${LOCAL_TIMEOUT:=120}"
: "${LOCAL_APISERVER_EXTRA_ARGS:=}"
: "${LOCAL_TRAINING_APISERVER_EXTRA_ARGS:=}"
# Environment of the training-apiserver alone, NAME=VALUE words separated by
# spaces, e.g. "GOGC=100 GOMEMLIMIT=512MiB" (docs/benchmarks.md, the GC tuner).
# The other components do not get it.
: "${LOCAL_TRAINING_APISERVER_ENV:=}"
: "${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS:=}"

# Whether this stack runs the real node: set by hack/local-up.sh, from
# LOCAL_REAL_NODE and what the machine allows (hack/lib/node.sh).
: "${LOCAL_REAL_NODE_RUNNING:=0}"

SERVICE_CIDR="10.0.0.0/24"
SERVICE_FIRST_IP="10.0.0.1"
# Fake addresses kwok reports for pods: nothing listens on them and no
# traffic is ever sent to them. The nodes report loopback, where kwok serves
# the kubelet API (pod logs) that kube-apiserver proxies to.
KWOK_POD_CIDR="10.16.0.0/12"
KWOK_NODE_IP="127.0.0.1"

TRAINING_NAMESPACE="tensorstack-system"
TRAINING_SERVICE="training-apiserver"
TRAINING_APISERVICE="v1beta1.batch.tensorstack.dev"

# The second scheduler: pods with this spec.schedulerName are its, the others
# kube-scheduler's (default-scheduler). It acts as this user (client certificate),
# bound in hack/local/scheduler-plugins-rbac.yaml.
SCHEDULER_PLUGINS_NAME="scheduler-plugins-scheduler"
SCHEDULER_PLUGINS_CRD="podgroups.scheduling.x-k8s.io"

# kwok runs as this user (client certificate, group system:masters);
# hack/local/kwok-pod-deletes.yaml names it.
KWOK_USER="local-kwok"
# Kueue runs as this user (client certificate, group system:masters: Kueue's
# own RBAC is not installed). Its webhooks and CRD conversion webhooks name
# the Service KUEUE_NAMESPACE/KUEUE_WEBHOOK_SERVICE (ExternalName 127.0.0.1);
# its certificate rotator keeps the serving certificate in KUEUE_WEBHOOK_SECRET
# and writes its CA into the caBundle of the webhook configurations
# kueue-mutating-webhook-configuration and kueue-validating-webhook-configuration
# (names Kueue derives from the Service's) and of the CRDs in
# KUEUE_CONVERSION_CRDS (those it converts between v1beta1 and v1beta2, stored).
KUEUE_USER="system:kueue"
KUEUE_NAMESPACE="kueue-system"
KUEUE_WEBHOOK_SERVICE="kueue-webhook-service"
KUEUE_WEBHOOK_SECRET="kueue-webhook-server-cert"
KUEUE_CONVERSION_CRDS=(localqueues clusterqueues workloads cohorts multikueueclusters)
# The webhooks of Kueue's manifests that are registered: Kueue's own kinds and
# the batch/job integration. The others (pods, deployments, statefulsets, the
# Kubeflow, Ray, JobSet ... kinds) would send every such request in the cluster
# to Kueue, which answers them with a no-op for a framework that is not
# enabled, and fail them (failurePolicy Fail) while Kueue is down.
KUEUE_WEBHOOKS=(
  mjob.kb.io mclusterqueue.kb.io mresourceflavor.kb.io mworkload.kb.io
  vjob.kb.io vclusterqueue.kb.io vcohort.kb.io vresourceflavor.kb.io vworkload.kb.io
)
KUEUE_CLUSTER_QUEUE="cluster-queue"

# Start order. Stop order is the reverse.
LOCAL_COMPONENTS=(
  etcd kube-apiserver kube-controller-manager kube-scheduler scheduler-plugins kueue kwok
  registry local-path-provisioner training-apiserver training-controller-manager
)

# Its discovery cache is the stack's own: the scripts run kubectl before the
# training-apiserver serves, and a cache written then would keep the
# trainingjobs category from users' and tests' kubectl for hours.
kubectl_local() {
  "${BIN_DIR}/kubectl" --kubeconfig="${LOCAL_KUBECONFIG}" --cache-dir="${LOCAL_DIR}/kubectl-cache" "$@"
}

# save_settings writes the effective settings to _output/local/env.sh.
save_settings() {
  local name
  {
    echo "# Settings of the local control plane started by hack/local-up.sh."
    for name in "${LOCAL_SETTINGS[@]}"; do
      printf '%s=%q\n' "${name}" "${!name}"
    done
  } >"${LOCAL_ENV_FILE}"
}

# load_settings reads _output/local/env.sh, if there is one.
load_settings() {
  if [[ -f "${LOCAL_ENV_FILE}" ]]; then
    # shellcheck source=/dev/null
    source "${LOCAL_ENV_FILE}"
  fi
}

training_enabled() {
  [[ -z "${LOCAL_SKIP_TRAINING}" || "${LOCAL_SKIP_TRAINING}" == "0" ]]
}

# gang_workload_enabled: the Workload API and kube-scheduler's gang scheduling.
gang_workload_enabled() {
  [[ "${LOCAL_GANG_WORKLOAD}" != "0" ]]
}

# scheduler_plugins_enabled: the second scheduler (coscheduling) and its CRD.
scheduler_plugins_enabled() {
  [[ "${LOCAL_SCHEDULER_PLUGINS}" != "0" ]]
}

# kueue_enabled: Kueue, its CRDs, webhooks and example queues.
kueue_enabled() {
  [[ "${LOCAL_KUEUE}" != "0" ]]
}

# active_components prints the components this stack runs, in start order.
active_components() {
  local c
  for c in "${LOCAL_COMPONENTS[@]}"; do
    if [[ "${c}" == training-* ]] && ! training_enabled; then
      continue
    fi
    if [[ "${c}" == scheduler-plugins ]] && ! scheduler_plugins_enabled; then
      continue
    fi
    if [[ "${c}" == kueue ]] && ! kueue_enabled; then
      continue
    fi
    # The registry and the storage provisioner serve the real node.
    if [[ "${c}" == registry || "${c}" == local-path-provisioner ]] && ! real_node_running; then
      continue
    fi
    echo "${c}"
  done
}

# component_binary NAME prints the executable of a component.
component_binary() {
  case "$1" in
    scheduler-plugins) printf '%s/kube-scheduler-plugins\n' "${BIN_DIR}" ;;
    *) printf '%s/%s\n' "${BIN_DIR}" "$1" ;;
  esac
}

# binary_component FILE prints the component an executable in BIN_DIR runs as.
binary_component() {
  case "$1" in
    kube-scheduler-plugins) echo scheduler-plugins ;;
    *) echo "$1" ;;
  esac
}

# component_ports NAME prints "SETTING PORT" lines for every port it listens on.
component_ports() {
  case "$1" in
    etcd)
      echo "LOCAL_ETCD_PORT ${LOCAL_ETCD_PORT}"
      echo "LOCAL_ETCD_PEER_PORT ${LOCAL_ETCD_PEER_PORT}"
      ;;
    kube-apiserver) echo "LOCAL_APISERVER_PORT ${LOCAL_APISERVER_PORT}" ;;
    kube-controller-manager) echo "LOCAL_KCM_PORT ${LOCAL_KCM_PORT}" ;;
    kube-scheduler) echo "LOCAL_SCHEDULER_PORT ${LOCAL_SCHEDULER_PORT}" ;;
    scheduler-plugins) echo "LOCAL_SCHEDULER_PLUGINS_PORT ${LOCAL_SCHEDULER_PLUGINS_PORT}" ;;
    kueue)
      echo "LOCAL_KUEUE_WEBHOOK_PORT ${LOCAL_KUEUE_WEBHOOK_PORT}"
      echo "LOCAL_KUEUE_METRICS_PORT ${LOCAL_KUEUE_METRICS_PORT}"
      echo "LOCAL_KUEUE_HEALTH_PORT ${LOCAL_KUEUE_HEALTH_PORT}"
      ;;
    kwok) echo "LOCAL_KWOK_PORT ${LOCAL_KWOK_PORT}" ;;
    registry) echo "LOCAL_REGISTRY_PORT ${LOCAL_REGISTRY_PORT}" ;;
    local-path-provisioner) ;;
    training-apiserver) echo "LOCAL_TRAINING_PORT ${LOCAL_TRAINING_PORT}" ;;
    training-controller-manager)
      echo "LOCAL_TRAINING_METRICS_PORT ${LOCAL_TRAINING_METRICS_PORT}"
      echo "LOCAL_TRAINING_HEALTH_PORT ${LOCAL_TRAINING_HEALTH_PORT}"
      ;;
    *) die "unknown component $1" ;;
  esac
}

# port_in_use PORT succeeds when something listens on TCP PORT (any address).
port_in_use() {
  local port="$1"
  if command -v ss >/dev/null 2>&1; then
    [[ -n "$(ss -Hltn "sport = :${port}" 2>/dev/null)" ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null
  fi
}

# check_ports_free NAME...: fails naming the first busy port and its setting.
check_ports_free() {
  local c setting port
  for c in "$@"; do
    while read -r setting port; do
      if port_in_use "${port}"; then
        die "port ${port} (${c}) is already in use on this machine.
  See what holds it:   ss -ltnp 'sport = :${port}'
  Or pick another:     ${setting}=<free port> $0"
      fi
    done < <(component_ports "${c}")
  done
}

# component_args NAME: fills the global array ARGS with the component's flags.
component_args() {
  local pki="${LOCAL_PKI_DIR}"
  ARGS=()
  case "$1" in
    etcd)
      ARGS=(
        --name=local
        --data-dir="${LOCAL_DIR}/etcd"
        --listen-client-urls="http://127.0.0.1:${LOCAL_ETCD_PORT}"
        --advertise-client-urls="http://127.0.0.1:${LOCAL_ETCD_PORT}"
        --listen-peer-urls="http://127.0.0.1:${LOCAL_ETCD_PEER_PORT}"
        --initial-advertise-peer-urls="http://127.0.0.1:${LOCAL_ETCD_PEER_PORT}"
        --initial-cluster="local=http://127.0.0.1:${LOCAL_ETCD_PEER_PORT}"
        # Test data only: skip fsync. Numbers measured with it are not durable-storage numbers.
        --unsafe-no-fsync=true
        --quota-backend-bytes=4294967296
        --log-level=warn
      )
      ;;
    kube-apiserver)
      # shellcheck disable=SC2054 # commas belong to flag values
      ARGS=(
        --etcd-servers="http://127.0.0.1:${LOCAL_ETCD_PORT}"
        --bind-address=127.0.0.1
        --advertise-address=127.0.0.1
        --secure-port="${LOCAL_APISERVER_PORT}"
        --endpoint-reconciler-type=none
        --authorization-mode=Node,RBAC
        --service-cluster-ip-range="${SERVICE_CIDR}"
        --allow-privileged=true
        --cert-dir="${LOCAL_DIR}/kube-apiserver"
        --client-ca-file="${pki}/ca.crt"
        --tls-cert-file="${pki}/kube-apiserver.crt"
        --tls-private-key-file="${pki}/kube-apiserver.key"
        --service-account-issuer=https://kubernetes.default.svc
        --service-account-key-file="${pki}/sa.pub"
        --service-account-signing-key-file="${pki}/sa.key"
        --requestheader-client-ca-file="${pki}/front-proxy-ca.crt"
        --requestheader-allowed-names=front-proxy-client
        --requestheader-username-headers=X-Remote-User
        --requestheader-group-headers=X-Remote-Group
        --requestheader-extra-headers-prefix=X-Remote-Extra-
        --proxy-client-cert-file="${pki}/front-proxy-client.crt"
        --proxy-client-key-file="${pki}/front-proxy-client.key"
        --kubelet-certificate-authority="${pki}/ca.crt"
        --kubelet-client-certificate="${pki}/kube-apiserver-kubelet-client.crt"
        --kubelet-client-key="${pki}/kube-apiserver-kubelet-client.key"
        --enable-aggregator-routing=false
        # On SIGTERM, drain short requests and close watches and proxied
        # (aggregated) connections after 2s instead of waiting up to 60s.
        --shutdown-send-retry-after=true
      )
      if gang_workload_enabled; then
        ARGS+=(--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true)
      fi
      if real_node_running; then
        # kubelets and pods are reached through nodeproxy (hack/lib/node.sh),
        # at their addresses: node names resolve nowhere.
        ARGS+=(--egress-selector-config-file="${NODE_DIR}/config/egress-selector.yaml"
          --kubelet-preferred-address-types=InternalIP,Hostname)
      fi
      # Word splitting of the extra arguments is intended.
      # shellcheck disable=SC2206
      ARGS+=(${LOCAL_APISERVER_EXTRA_ARGS})
      ;;
    kube-controller-manager)
      local kc="${pki}/kube-controller-manager.kubeconfig"
      ARGS=(
        --kubeconfig="${kc}"
        --authentication-kubeconfig="${kc}"
        --authorization-kubeconfig="${kc}"
        --bind-address=127.0.0.1
        --secure-port="${LOCAL_KCM_PORT}"
        --cert-dir="${LOCAL_DIR}/kube-controller-manager"
        --leader-elect=false
        --use-service-account-credentials=true
        --service-account-private-key-file="${pki}/sa.key"
        --root-ca-file="${pki}/ca.crt"
        --cluster-signing-cert-file="${pki}/ca.crt"
        --cluster-signing-key-file="${pki}/ca.key"
        --service-cluster-ip-range="${SERVICE_CIDR}"
        --kube-api-qps=200
        --kube-api-burst=400
      )
      if gang_workload_enabled; then
        ARGS+=(--feature-gates=GenericWorkload=true)
      fi
      ;;
    kube-scheduler)
      local kc="${pki}/kube-scheduler.kubeconfig"
      ARGS=(
        --config="${LOCAL_CONFIG_DIR}/kube-scheduler.yaml"
        --authentication-kubeconfig="${kc}"
        --authorization-kubeconfig="${kc}"
        --bind-address=127.0.0.1
        --secure-port="${LOCAL_SCHEDULER_PORT}"
        --cert-dir="${LOCAL_DIR}/kube-scheduler"
        --leader-elect=false
      )
      if gang_workload_enabled; then
        # Also enables the GangScheduling plugin in the default profile.
        ARGS+=(--feature-gates=GenericWorkload=true)
      fi
      ;;
    scheduler-plugins)
      local kc="${pki}/scheduler-plugins.kubeconfig"
      ARGS=(
        --config="${LOCAL_CONFIG_DIR}/scheduler-plugins.yaml"
        --authentication-kubeconfig="${kc}"
        --authorization-kubeconfig="${kc}"
        --bind-address=127.0.0.1
        --secure-port="${LOCAL_SCHEDULER_PLUGINS_PORT}"
        --cert-dir="${LOCAL_DIR}/scheduler-plugins"
        --leader-elect=false
      )
      ;;
    kueue)
      # Ports, certificates, integrations: the configuration file.
      ARGS=(
        --config="${LOCAL_CONFIG_DIR}/kueue.yaml"
        --kubeconfig="${pki}/kueue.kubeconfig"
      )
      ;;
    kwok)
      ARGS=(
        --kubeconfig="${pki}/kwok.kubeconfig"
        --config="${LOCAL_CONFIG_DIR}/kwok-stages.yaml"
        --manage-all-nodes=false
        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake
        --cidr="${KWOK_POD_CIDR}"
        --node-ip="${KWOK_NODE_IP}"
        --node-port="${LOCAL_KWOK_PORT}"
        --tls-cert-file="${pki}/kwok-kubelet.crt"
        --tls-private-key-file="${pki}/kwok-kubelet.key"
        --node-lease-duration-seconds=40
        --server-address="127.0.0.1:${LOCAL_KWOK_PORT}"
      )
      ;;
    registry)
      ARGS=(serve "${LOCAL_CONFIG_DIR}/registry.yaml")
      ;;
    local-path-provisioner)
      ARGS=(
        start
        --config="${LOCAL_CONFIG_DIR}/local-path-provisioner.json"
        --kubeconfig="${pki}/local-path-provisioner.kubeconfig"
        --namespace="${STORAGE_NAMESPACE}"
        --helper-image="${TRAINING_IMAGE}"
      )
      ;;
    training-apiserver)
      ARGS=(
        --secure-port="${LOCAL_TRAINING_PORT}"
        --bind-address=127.0.0.1
        --tls-cert-file="${pki}/training-apiserver.crt"
        --tls-private-key-file="${pki}/training-apiserver.key"
        --kubeconfig="${LOCAL_KUBECONFIG}"
        --authentication-kubeconfig="${LOCAL_KUBECONFIG}"
        --authorization-kubeconfig="${LOCAL_KUBECONFIG}"
        # As installed: requests without credentials get 401, except for
        # the health checks.
        --anonymous-auth=false
        --embedded-etcd-dir="${LOCAL_DIR}/training-etcd"
        # Test data only, like kube-apiserver's etcd above.
        --embedded-etcd-unsafe-no-fsync
      )
      # shellcheck disable=SC2206
      ARGS+=(${LOCAL_TRAINING_APISERVER_EXTRA_ARGS})
      ;;
    training-controller-manager)
      ARGS=(
        --kubeconfig="${LOCAL_KUBECONFIG}"
        --leader-elect=false
        --metrics-bind-address="127.0.0.1:${LOCAL_TRAINING_METRICS_PORT}"
        --health-probe-bind-address="127.0.0.1:${LOCAL_TRAINING_HEALTH_PORT}"
      )
      [[ "${LOCAL_TRAINING_METRICS_SECURE}" == 1 ]] || ARGS+=(--metrics-secure=false)
      # shellcheck disable=SC2206
      ARGS+=(${LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS})
      ;;
    *) die "unknown component $1" ;;
  esac
}

# pid_alive PID succeeds when the process exists and is not a zombie.
pid_alive() {
  local pid="$1" stat state
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  { read -r stat <"/proc/${pid}/stat"; } 2>/dev/null || return 1
  state="${stat##*) }"
  state="${state%% *}"
  [[ "${state}" != "Z" && "${state}" != "X" ]]
}

# pid_is_component PID NAME succeeds when PID runs this checkout's binary for
# component NAME with state under _output/local (guards against reused pids).
pid_is_component() {
  local pid="$1" name="$2" exe
  pid_alive "${pid}" || return 1
  exe="$(readlink "/proc/${pid}/exe" 2>/dev/null)" || return 1
  [[ "${exe}" == "$(component_binary "${name}")" || "${exe}" == "$(component_binary "${name}") (deleted)" ]] || return 1
  tr '\0' '\n' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF "${LOCAL_DIR}/"
}

pid_file() {
  printf '%s/%s.pid\n' "${LOCAL_PID_DIR}" "$1"
}

# component_pid NAME prints the pid of the running component, if any.
component_pid() {
  local file pid
  file="$(pid_file "$1")"
  [[ -f "${file}" ]] || return 1
  pid="$(<"${file}")"
  pid_is_component "${pid}" "$1" || return 1
  echo "${pid}"
}

# local_processes prints "NAME PID" for every process of this checkout that
# runs one of the component binaries with state under _output/local, found
# through /proc whether or not a pid file knows it.
local_processes() {
  local link pid exe name
  while read -r link; do
    pid="${link#/proc/}"
    pid="${pid%/exe}"
    exe="$(readlink "${link}" 2>/dev/null)" || continue
    exe="${exe% (deleted)}"
    name="$(binary_component "${exe#"${BIN_DIR}/"}")"
    if [[ " ${LOCAL_COMPONENTS[*]} " == *" ${name} "* ]] && pid_is_component "${pid}" "${name}"; then
      echo "${name} ${pid}"
    fi
  done < <(find /proc -mindepth 2 -maxdepth 2 -name exe -lname "${BIN_DIR}/*" 2>/dev/null)
}

# stray_pids NAME prints pids of processes running component NAME of this
# checkout. Uses the snapshot in LOCAL_PROCESSES when set (scanning /proc takes
# about a second on a busy machine), else scans.
stray_pids() {
  local name pid snapshot="${LOCAL_PROCESSES:-}"
  if [[ -z "${LOCAL_PROCESSES+set}" ]]; then
    snapshot="$(local_processes)"
  fi
  while read -r name pid; do
    if [[ "${name}" == "$1" ]]; then
      echo "${pid}"
    fi
  done <<<"${snapshot}"
}

# start_component NAME: starts it in the background, in its own session so a
# Ctrl-C on the terminal reaches only the script, which stops things in order.
start_component() {
  local name="$1" bin log pid
  bin="$(component_binary "${name}")"
  [[ -x "${bin}" ]] || die "${bin#"${REPO_ROOT}/"} not found; build it first (make test-binaries / make build)"
  component_args "${name}"
  # env(1) execs the binary in the same process: the pid stays the component's.
  local envs=()
  if [[ "${name}" == training-apiserver && -n "${LOCAL_TRAINING_APISERVER_ENV// /}" ]]; then
    # Word splitting of the NAME=VALUE words is intended.
    # shellcheck disable=SC2206
    envs=(env ${LOCAL_TRAINING_APISERVER_ENV})
  fi
  log="${LOCAL_LOG_DIR}/${name}.log"
  mkdir -p "${LOCAL_LOG_DIR}" "${LOCAL_PID_DIR}"
  {
    printf '==== %s starting %s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "${name}"
    printf '%q ' "${envs[@]:1}" "${bin}" "${ARGS[@]}"
    printf '\n'
  } >>"${log}"
  # fd 3 may hold the caller's saved stderr (local-up.sh): not for the component.
  setsid "${envs[@]}" "${bin}" "${ARGS[@]}" </dev/null >>"${log}" 2>&1 3>&- &
  pid=$!
  echo "${pid}" >"$(pid_file "${name}")"
  log "started ${name} (pid ${pid}, log ${log#"${REPO_ROOT}/"})"
}

# stop_pid NAME PID TIMEOUT: SIGTERM, then SIGKILL after TIMEOUT seconds.
stop_pid() {
  local name="$1" pid="$2" timeout="$3" deadline
  deadline=$((SECONDS + timeout))
  kill -TERM "${pid}" 2>/dev/null || true
  while pid_alive "${pid}"; do
    if ((SECONDS >= deadline)); then
      log "${name} (pid ${pid}) did not exit within ${timeout}s of SIGTERM; sending SIGKILL"
      kill -KILL "${pid}" 2>/dev/null || true
      deadline=$((SECONDS + 5))
      while pid_alive "${pid}" && ((SECONDS < deadline)); do sleep 0.1; done
      break
    fi
    sleep 0.1
  done
  # Reap it when it is our child (foreground mode); harmless otherwise.
  wait "${pid}" 2>/dev/null || true
}

# stop_component NAME: stops the process from the pid file and any stray
# process of the same component of this checkout.
stop_component() {
  # Seconds between SIGTERM and SIGKILL. An aggregated apiserver built on
  # k8s.io/apiserver waits up to its request timeout (60s) for long-running
  # requests, such as the watches kube-apiserver proxies to it, before exiting.
  local name="$1" pid timeout=10 found=0
  case "${name}" in
    kube-apiserver) timeout=20 ;;
  esac
  if pid="$(component_pid "${name}")"; then
    log "stopping ${name} (pid ${pid})"
    stop_pid "${name}" "${pid}" "${timeout}"
    found=1
  fi
  for pid in $(stray_pids "${name}"); do
    pid_is_component "${pid}" "${name}" || continue
    log "stopping stray ${name} (pid ${pid}) left from an earlier run"
    stop_pid "${name}" "${pid}" "${timeout}"
    found=1
  done
  rm -f "$(pid_file "${name}")"
  if ((found == 0)); then
    return 1
  fi
}

# stop_all: every component, in reverse start order, the real node first.
# Prints whether anything ran.
stop_all() {
  local i stopped=0 LOCAL_PROCESSES
  multikueue_worker_down
  node_down
  LOCAL_PROCESSES="$(local_processes)"
  for ((i = ${#LOCAL_COMPONENTS[@]} - 1; i >= 0; i--)); do
    if stop_component "${LOCAL_COMPONENTS[i]}"; then
      stopped=1
    fi
  done
  if ((stopped)); then
    log "local control plane stopped"
  else
    log "no local control plane was running"
  fi
}

# running_components prints the components of this checkout that are running.
running_components() {
  local c
  {
    for c in "${LOCAL_COMPONENTS[@]}"; do
      if component_pid "${c}" >/dev/null; then
        echo "${c}"
      fi
    done
    local_processes | cut -d' ' -f1
  } | sort -u
}

# wait_until NAME WHAT TIMEOUT COMMAND...: retries COMMAND until it succeeds.
# Fails early, with the end of the log, when component NAME has exited.
wait_until() {
  local name="$1" what="$2" timeout="$3"
  shift 3
  local start=${SECONDS} pid
  log "waiting for ${what} (up to ${timeout}s)"
  while true; do
    if "$@" >/dev/null 2>&1; then
      log "${what}: ok after $((SECONDS - start))s"
      return 0
    fi
    if [[ -n "${name}" ]]; then
      pid="$(cat "$(pid_file "${name}")" 2>/dev/null || true)"
      if ! pid_alive "${pid}"; then
        show_log_tail "${name}"
        die "${name} exited while waiting for ${what}; see ${LOCAL_LOG_DIR#"${REPO_ROOT}/"}/${name}.log"
      fi
    fi
    if ((SECONDS - start >= timeout)); then
      show_log_tail "${name}"
      die "timed out after ${timeout}s waiting for ${what}"
    fi
    sleep 0.5
  done
}

show_log_tail() {
  local name="$1" log
  [[ -n "${name}" ]] || return 0
  log="${LOCAL_LOG_DIR}/${name}.log"
  [[ -f "${log}" ]] || return 0
  echo "---- last lines of ${log#"${REPO_ROOT}/"} ----" >&2
  tail -n 25 "${log}" >&2
  echo "----" >&2
}

# https_ok URL: an HTTPS GET with the admin client certificate returns 2xx.
https_ok() {
  curl -fsS --max-time 5 -o /dev/null \
    --cacert "${LOCAL_PKI_DIR}/ca.crt" \
    --cert "${LOCAL_PKI_DIR}/admin.crt" --key "${LOCAL_PKI_DIR}/admin.key" "$1"
}

# https_insecure_ok URL: a GET on a self-signed endpoint (healthz) returns 2xx.
https_insecure_ok() {
  curl -fsSk --max-time 5 -o /dev/null "$1"
}

# http_answers URL: 2xx from /readyz or /healthz, or the server answers 404 on
# both (no probe endpoint registered; listening is all we can check).
http_health_ok() {
  local base="$1" code path not_found=0
  for path in readyz healthz; do
    code="$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "${base}/${path}" 2>/dev/null)" || code=000
    case "${code}" in
      2??) return 0 ;;
      404) not_found=$((not_found + 1)) ;;
    esac
  done
  ((not_found == 2))
}

apiservice_available() {
  [[ "$(kubectl_local get apiservice "${TRAINING_APISERVICE}" \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" == "True" ]]
}

default_serviceaccount_exists() {
  kubectl_local -n default get serviceaccount default
}

all_fake_nodes_ready() {
  local ready
  ready="$(kubectl_local get nodes -l type=kwok \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    grep -c '^True$')" || true
  [[ "${ready}" -ge "${LOCAL_FAKE_NODES}" ]]
}

# wait_component NAME: waits until the component serves.
wait_component() {
  local name="$1" t="${LOCAL_TIMEOUT}"
  case "${name}" in
    etcd)
      wait_until etcd "etcd on 127.0.0.1:${LOCAL_ETCD_PORT}" "${t}" \
        curl -fsS --max-time 5 "http://127.0.0.1:${LOCAL_ETCD_PORT}/health"
      ;;
    kube-apiserver)
      wait_until kube-apiserver "kube-apiserver /readyz on 127.0.0.1:${LOCAL_APISERVER_PORT}" "${t}" \
        https_ok "https://127.0.0.1:${LOCAL_APISERVER_PORT}/readyz"
      ;;
    kube-controller-manager)
      wait_until kube-controller-manager "kube-controller-manager /healthz on 127.0.0.1:${LOCAL_KCM_PORT}" "${t}" \
        https_insecure_ok "https://127.0.0.1:${LOCAL_KCM_PORT}/healthz"
      ;;
    kube-scheduler)
      wait_until kube-scheduler "kube-scheduler /readyz on 127.0.0.1:${LOCAL_SCHEDULER_PORT}" "${t}" \
        https_insecure_ok "https://127.0.0.1:${LOCAL_SCHEDULER_PORT}/readyz"
      ;;
    scheduler-plugins)
      wait_until scheduler-plugins "scheduler-plugins /readyz on 127.0.0.1:${LOCAL_SCHEDULER_PLUGINS_PORT}" "${t}" \
        https_insecure_ok "https://127.0.0.1:${LOCAL_SCHEDULER_PLUGINS_PORT}/readyz"
      ;;
    kueue)
      # Kueue's certificate rotator fills its Secret; the files must then be
      # in certDir before Kueue goes on (it waits for them, as for a mounted
      # Secret in a pod), injects its CA and starts its webhook server.
      wait_until kueue "Kueue's webhook certificate in ${KUEUE_NAMESPACE}/${KUEUE_WEBHOOK_SECRET}" "${t}" kueue_sync_certs
      wait_until kueue "kueue /readyz on 127.0.0.1:${LOCAL_KUEUE_HEALTH_PORT}" "${t}" \
        curl -fsS --max-time 5 "http://127.0.0.1:${LOCAL_KUEUE_HEALTH_PORT}/readyz"
      wait_until kueue "Kueue's webhooks (a dry-run ClusterQueue through kube-apiserver)" "${t}" kueue_webhooks_answer
      ;;
    kwok)
      wait_until kwok "kwok /healthz on 127.0.0.1:${LOCAL_KWOK_PORT}" "${t}" \
        curl -fsS --max-time 5 --cacert "${LOCAL_PKI_DIR}/ca.crt" "https://127.0.0.1:${LOCAL_KWOK_PORT}/healthz"
      ;;
    registry)
      wait_until registry "the image registry on ${LOCAL_REGISTRY}" "${t}" registry_ready
      ;;
    local-path-provisioner)
      wait_until local-path-provisioner "local-path-provisioner watching claims" "${t}" storage_provisioner_ready
      ;;
    training-apiserver)
      wait_until training-apiserver "training-apiserver /readyz on 127.0.0.1:${LOCAL_TRAINING_PORT}" "${t}" \
        curl -fsS --max-time 5 --cacert "${LOCAL_PKI_DIR}/training-ca.crt" \
        "https://127.0.0.1:${LOCAL_TRAINING_PORT}/readyz"
      wait_until training-apiserver "APIService ${TRAINING_APISERVICE} Available" "${t}" apiservice_available
      ;;
    training-controller-manager)
      wait_until training-controller-manager \
        "training-controller-manager health probe on 127.0.0.1:${LOCAL_TRAINING_HEALTH_PORT}" "${t}" \
        http_health_ok "http://127.0.0.1:${LOCAL_TRAINING_HEALTH_PORT}"
      ;;
    *) die "unknown component ${name}" ;;
  esac
}

# generate_pki: all certificates, keys and kubeconfigs of the stack.
generate_pki() {
  local pki="${LOCAL_PKI_DIR}" server="https://127.0.0.1:${LOCAL_APISERVER_PORT}"
  command -v openssl >/dev/null 2>&1 || die "openssl is needed (apt-get install openssl)"
  log "generating PKI in ${pki#"${REPO_ROOT}/"}"
  mkdir -p "${pki}"
  chmod 700 "${pki}"
  pki_ca "${pki}" ca "local-kubernetes-ca"
  pki_ca "${pki}" front-proxy-ca "local-front-proxy-ca"
  pki_ca "${pki}" training-ca "local-training-apiserver-ca"
  pki_cert "${pki}" ca kube-apiserver "/CN=kube-apiserver" server \
    127.0.0.1 localhost kubernetes kubernetes.default kubernetes.default.svc \
    kubernetes.default.svc.cluster.local "${SERVICE_FIRST_IP}"
  pki_cert "${pki}" front-proxy-ca front-proxy-client "/CN=front-proxy-client" client
  pki_cert "${pki}" ca admin "/O=system:masters/CN=local-admin" client
  # What kube-apiserver shows kubelets (logs, exec); the real node's kubelet
  # authorizes it through a SubjectAccessReview.
  pki_cert "${pki}" ca kube-apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
  pki_cert "${pki}" ca kube-controller-manager "/CN=system:kube-controller-manager" client
  pki_cert "${pki}" ca kube-scheduler "/CN=system:kube-scheduler" client
  # The fake nodes' kubelet API, served by kwok on loopback; kwok's own
  # identity lets hack/local/kwok-pod-deletes.yaml single out its deletes.
  pki_cert "${pki}" ca kwok-kubelet "/CN=kwok-kubelet" server 127.0.0.1 localhost
  pki_cert "${pki}" ca kwok "/O=system:masters/CN=${KWOK_USER}" client
  pki_cert "${pki}" training-ca training-apiserver "/CN=${TRAINING_SERVICE}.${TRAINING_NAMESPACE}.svc" server \
    "${TRAINING_SERVICE}.${TRAINING_NAMESPACE}.svc" \
    "${TRAINING_SERVICE}.${TRAINING_NAMESPACE}.svc.cluster.local" localhost 127.0.0.1
  pki_keypair "${pki}" sa
  write_kubeconfig "${LOCAL_KUBECONFIG}" "${server}" "${pki}/ca.crt" "${pki}/admin.crt" "${pki}/admin.key" local-admin
  write_kubeconfig "${pki}/kube-controller-manager.kubeconfig" "${server}" "${pki}/ca.crt" \
    "${pki}/kube-controller-manager.crt" "${pki}/kube-controller-manager.key" system:kube-controller-manager
  write_kubeconfig "${pki}/kube-scheduler.kubeconfig" "${server}" "${pki}/ca.crt" \
    "${pki}/kube-scheduler.crt" "${pki}/kube-scheduler.key" system:kube-scheduler
  write_kubeconfig "${pki}/kwok.kubeconfig" "${server}" "${pki}/ca.crt" \
    "${pki}/kwok.crt" "${pki}/kwok.key" "${KWOK_USER}"
  if scheduler_plugins_enabled; then
    pki_cert "${pki}" ca scheduler-plugins "/CN=${SCHEDULER_PLUGINS_NAME}" client
    write_kubeconfig "${pki}/scheduler-plugins.kubeconfig" "${server}" "${pki}/ca.crt" \
      "${pki}/scheduler-plugins.crt" "${pki}/scheduler-plugins.key" "${SCHEDULER_PLUGINS_NAME}"
  fi
  if real_node_running; then
    pki_cert "${pki}" ca local-path-provisioner "/O=system:masters/CN=${STORAGE_USER}" client
    write_kubeconfig "${pki}/local-path-provisioner.kubeconfig" "${server}" "${pki}/ca.crt" \
      "${pki}/local-path-provisioner.crt" "${pki}/local-path-provisioner.key" "${STORAGE_USER}"
  fi
  if kueue_enabled; then
    pki_cert "${pki}" ca kueue "/O=system:masters/CN=${KUEUE_USER}" client
    write_kubeconfig "${pki}/kueue.kubeconfig" "${server}" "${pki}/ca.crt" \
      "${pki}/kueue.crt" "${pki}/kueue.key" "${KUEUE_USER}"
  fi
}

# kwok_stage_dir prints the directory of kwok's stock Stage files in the module cache.
kwok_stage_dir() {
  local dir
  dir="$(go_mod_cache)/sigs.k8s.io/kwok@${KWOK_VERSION}"
  if [[ ! -d "${dir}/kustomize/stage" ]]; then
    # Not in the cache yet (binary built elsewhere): let go download the module.
    dir="$(cd "${TOOLS_DIR}/kwok" && GOFLAGS=-mod=mod go mod download -json sigs.k8s.io/kwok |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" || true
  fi
  [[ -n "${dir}" && -d "${dir}/kustomize/stage" ]] ||
    die "kwok ${KWOK_VERSION} stage files not found in the Go module cache; run hack/build-test-binaries.sh"
  printf '%s/kustomize/stage\n' "${dir}"
}

# scheduler_plugins_dir prints the directory of the scheduler-plugins module
# (its CRD manifests) in the module cache.
scheduler_plugins_dir() {
  local dir
  dir="$(go_mod_cache)/sigs.k8s.io/scheduler-plugins@${SCHEDULER_PLUGINS_VERSION}"
  if [[ ! -d "${dir}/config/crd" ]]; then
    # Not in the cache yet (binary built elsewhere): let go download the module.
    dir="$(cd "${TOOLS_DIR}/scheduler-plugins" && GOFLAGS=-mod=mod go mod download -json sigs.k8s.io/scheduler-plugins |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" || true
  fi
  [[ -n "${dir}" && -d "${dir}/config/crd" ]] ||
    die "scheduler-plugins ${SCHEDULER_PLUGINS_VERSION} not found in the Go module cache; run hack/build-test-binaries.sh"
  printf '%s\n' "${dir}"
}

scheduler_plugins_crd_established() {
  [[ "$(kubectl_local get crd "${SCHEDULER_PLUGINS_CRD}" \
    -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" == "True" ]]
}

# install_scheduler_plugins: the PodGroup CRD (scheduling.x-k8s.io/v1alpha1,
# the only one the coscheduling plugin reads) from the module, and the second
# scheduler's RBAC; waits until the CRD is served. Call it before the
# scheduler starts.
install_scheduler_plugins() {
  local crd
  crd="$(scheduler_plugins_dir)/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
  [[ -f "${crd}" ]] || die "${crd} is missing"
  log "installing CRD ${SCHEDULER_PLUGINS_CRD} (scheduler-plugins ${SCHEDULER_PLUGINS_VERSION}) and the RBAC of ${SCHEDULER_PLUGINS_NAME}"
  kubectl_local apply -f "${crd}" -f "${LOCAL_HACK_DIR}/scheduler-plugins-rbac.yaml" >/dev/null
  wait_until "" "CRD ${SCHEDULER_PLUGINS_CRD} Established" "${LOCAL_TIMEOUT}" scheduler_plugins_crd_established
}

# kueue_dir prints the directory of the Kueue module (CRDs, webhook manifests)
# in the module cache.
kueue_dir() {
  local dir
  dir="$(go_mod_cache)/sigs.k8s.io/kueue@${KUEUE_VERSION}"
  if [[ ! -d "${dir}/config/components/crd/bases" ]]; then
    # Not in the cache yet (binary built elsewhere): let go download the module.
    dir="$(cd "${TOOLS_DIR}/kueue" && GOFLAGS=-mod=mod go mod download -json sigs.k8s.io/kueue |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" || true
  fi
  [[ -n "${dir}" && -d "${dir}/config/components/crd/bases" ]] ||
    die "kueue ${KUEUE_VERSION} not found in the Go module cache; run hack/build-test-binaries.sh"
  printf '%s\n' "${dir}"
}

kueue_cert_dir() {
  printf '%s/kueue/certs\n' "${LOCAL_DIR}"
}

# kueue_quantity_times QUANTITY N prints QUANTITY (a Kubernetes quantity such
# as 1000 or 4Ti) multiplied by N when it is an integer with an optional unit,
# else QUANTITY itself.
kueue_quantity_times() {
  local q="$1" n="$2"
  if [[ "${q}" =~ ^([0-9]+)([A-Za-z]*)$ ]]; then
    printf '%s%s\n' "$((BASH_REMATCH[1] * n))" "${BASH_REMATCH[2]}"
  else
    printf '%s\n' "${q}"
  fi
}

# generate_kueue_configs: Kueue's configuration, the objects it needs before it
# starts, its CRDs with the conversion webhook, its webhook configurations (the
# registered subset of the module's, KUEUE_WEBHOOKS) and the example queues,
# all into LOCAL_CONFIG_DIR.
generate_kueue_configs() {
  local dir bases crd name port="${LOCAL_KUEUE_WEBHOOK_PORT}" out
  dir="$(kueue_dir)"
  bases="${dir}/config/components/crd/bases"

  sed -e "s|@HEALTH_PORT@|${LOCAL_KUEUE_HEALTH_PORT}|g" \
    -e "s|@METRICS_PORT@|${LOCAL_KUEUE_METRICS_PORT}|g" \
    -e "s|@WEBHOOK_PORT@|${port}|g" \
    -e "s|@CERT_DIR@|$(kueue_cert_dir)|g" \
    -e "s|@PODS_READY_TIMEOUT@|${LOCAL_KUEUE_PODS_READY_TIMEOUT}|g" \
    "${LOCAL_HACK_DIR}/kueue/kueue-config.yaml" >"${LOCAL_CONFIG_DIR}/kueue.yaml"
  sed -e "s|@WEBHOOK_PORT@|${port}|g" \
    "${LOCAL_HACK_DIR}/kueue/system.yaml" >"${LOCAL_CONFIG_DIR}/kueue-system.yaml"

  # Every CRD of the module (Kueue's controllers watch most of them); those it
  # converts between v1beta1 and v1beta2 (stored) get the conversion webhook,
  # as Kueue's kustomization patches them (config/components/crd/patches).
  # With LOCAL_KUEUE_V1BETA1=0, v1beta1 is marked unserved (kueue_crd_versions).
  out="${LOCAL_CONFIG_DIR}/kueue-crds.yaml"
  : >"${out}"
  for crd in "${bases}"/kueue.x-k8s.io_*.yaml; do
    name="$(basename "${crd}" .yaml)"
    name="${name#kueue.x-k8s.io_}"
    if [[ " ${KUEUE_CONVERSION_CRDS[*]} " == *" ${name} "* ]]; then
      [[ "$(grep -c '^spec:$' "${crd}")" == 1 ]] || die "${crd}: expected one top-level spec:"
      kueue_crd_versions <"${crd}" | sed -e "/^spec:\$/a\\
  conversion:\\
    strategy: Webhook\\
    webhook:\\
      clientConfig:\\
        service:\\
          namespace: ${KUEUE_NAMESPACE}\\
          name: ${KUEUE_WEBHOOK_SERVICE}\\
          path: /convert\\
          port: ${port}\\
      conversionReviewVersions:\\
      - v1" >>"${out}"
    else
      kueue_crd_versions <"${crd}" >>"${out}"
    fi
  done
  for name in "${KUEUE_CONVERSION_CRDS[@]}"; do
    grep -q "^  name: ${name}.kueue.x-k8s.io\$" "${out}" || die "Kueue ${KUEUE_VERSION} has no CRD ${name}.kueue.x-k8s.io"
  done

  # controller-gen's manifests.yaml: a document per configuration, a webhook
  # per "- admissionReviewVersions:" entry. Keep the entries of KUEUE_WEBHOOKS,
  # rename the configurations as Kueue's rotator expects them, point the
  # service at ours and its port.
  awk -v keep=" ${KUEUE_WEBHOOKS[*]} " -v svc="${KUEUE_WEBHOOK_SERVICE}" -v ns="${KUEUE_NAMESPACE}" -v port="${port}" '
    function flush() {
      if (entry != "" && index(keep, " " name " ") > 0) { printf "%s", entry; kept[name] = 1 }
      entry = ""; name = ""
    }
    /^---$/ { flush(); inentry = 0; print; next }
    /^- admissionReviewVersions:$/ { flush(); inentry = 1 }
    !inentry {
      if ($0 ~ /^  name: (mutating|validating)-webhook-configuration$/) { sub(/name: /, "name: kueue-") }
      print; next
    }
    {
      line = $0
      if (line ~ /^  name: /) { name = substr(line, 9) }
      if (line == "      name: webhook-service") { line = "      name: " svc }
      if (line == "      namespace: system") { line = "      namespace: " ns }
      entry = entry line "\n"
      if (line ~ /^      path: /) { entry = entry "      port: " port "\n" }
    }
    END {
      flush()
      n = split(keep, want, " ")
      for (i = 1; i <= n; i++) if (!(want[i] in kept)) { print "missing webhook " want[i] > "/dev/stderr"; exit 1 }
    }
  ' "${dir}/config/components/webhook/manifests.yaml" >"${LOCAL_CONFIG_DIR}/kueue-webhooks.yaml" ||
    die "the webhook manifests of Kueue ${KUEUE_VERSION} lack one of KUEUE_WEBHOOKS"

  kueue_fill_quotas <"${LOCAL_HACK_DIR}/kueue/queues.yaml" >"${LOCAL_CONFIG_DIR}/kueue-queues.yaml"
  if multikueue_enabled; then
    kueue_fill_quotas <"${LOCAL_HACK_DIR}/multikueue/manager.yaml" >"${LOCAL_CONFIG_DIR}/multikueue-manager.yaml"
  fi
}

# kueue_fill_quotas copies a queues file from stdin to stdout with the quota
# placeholders filled in: LOCAL_KUEUE_GPU_QUOTA GPUs, the fake nodes' cpu and
# memory.
kueue_fill_quotas() {
  sed -e "s|@GPU_QUOTA@|${LOCAL_KUEUE_GPU_QUOTA}|g" \
    -e "s|@CPU_QUOTA@|$(kueue_quantity_times "${LOCAL_NODE_CPU}" "${LOCAL_FAKE_NODES}")|g" \
    -e "s|@MEMORY_QUOTA@|$(kueue_quantity_times "${LOCAL_NODE_MEMORY}" "${LOCAL_FAKE_NODES}")|g"
}

# kueue_crd_versions copies a Kueue CRD from stdin to stdout; with
# LOCAL_KUEUE_V1BETA1=0 its v1beta1 version is not served, as in Kueue v0.20
# (kueue#14558). controller-gen writes each version as "  - ..." with
# "    name:" and "    served:" inside it.
kueue_crd_versions() {
  if [[ "${LOCAL_KUEUE_V1BETA1}" != 0 ]]; then
    cat
    return
  fi
  awk '
    /^  - / { version = "" }
    /^    name: / { version = $2 }
    /^    served: true$/ && version == "v1beta1" { print "    served: false"; next }
    { print }
  '
}

kueue_crds_established() {
  local n
  n="$(kubectl_local get crd -o jsonpath='{range .items[*]}{.spec.group} {.status.conditions[?(@.type=="Established")].status}{"\n"}{end}' |
    grep -c '^kueue.x-k8s.io True$')" || true
  [[ "${n}" -ge "$(grep -c '^kind: CustomResourceDefinition$' "${LOCAL_CONFIG_DIR}/kueue-crds.yaml")" ]]
}

# install_kueue: Kueue's namespace, Secret and Service, its CRDs (server-side:
# the Workload CRD is 1.4 MB, over the limit of the last-applied annotation)
# and webhook configurations; waits until the CRDs are served. Call it before
# Kueue starts.
install_kueue() {
  log "installing Kueue ${KUEUE_VERSION}: namespace ${KUEUE_NAMESPACE}, Service ${KUEUE_WEBHOOK_SERVICE} (ExternalName 127.0.0.1:${LOCAL_KUEUE_WEBHOOK_PORT}), CRDs kueue.x-k8s.io, webhook configurations"
  kubectl_local apply -f "${LOCAL_CONFIG_DIR}/kueue-system.yaml" >/dev/null
  kubectl_local apply --server-side --force-conflicts -f "${LOCAL_CONFIG_DIR}/kueue-crds.yaml" >/dev/null
  kubectl_local apply --server-side --force-conflicts -f "${LOCAL_CONFIG_DIR}/kueue-webhooks.yaml" >/dev/null
  wait_until "" "CRDs kueue.x-k8s.io Established" "${LOCAL_TIMEOUT}" kueue_crds_established
}

# kueue_sync_certs copies the serving certificate from Kueue's Secret into its
# certDir (a kubelet's job in a pod). Fails while the Secret is still empty.
kueue_sync_certs() {
  local dir crt key
  dir="$(kueue_cert_dir)"
  crt="$(kubectl_local -n "${KUEUE_NAMESPACE}" get secret "${KUEUE_WEBHOOK_SECRET}" -o jsonpath='{.data.tls\.crt}')" || return 1
  key="$(kubectl_local -n "${KUEUE_NAMESPACE}" get secret "${KUEUE_WEBHOOK_SECRET}" -o jsonpath='{.data.tls\.key}')" || return 1
  [[ -n "${crt}" && -n "${key}" ]] || return 1
  mkdir -p "${dir}"
  chmod 700 "${dir}"
  # The key first: the rotator waits for tls.crt.
  base64 -d <<<"${key}" >"${dir}/tls.key.tmp" && mv -f "${dir}/tls.key.tmp" "${dir}/tls.key" || return 1
  base64 -d <<<"${crt}" >"${dir}/tls.crt.tmp" && mv -f "${dir}/tls.crt.tmp" "${dir}/tls.crt"
}

# kueue_webhooks_answer: a ClusterQueue, created as a dry run, goes through
# Kueue's mutating and validating webhooks.
kueue_webhooks_answer() {
  kubectl_local create --dry-run=server -o name -f - <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: local-up-webhook-check
spec:
  namespaceSelector: {}
EOF
}

kueue_cluster_queue_active() {
  [[ "$(kubectl_local get clusterqueues.v1beta2.kueue.x-k8s.io "${KUEUE_CLUSTER_QUEUE}" \
    -o jsonpath='{.status.conditions[?(@.type=="Active")].status}' 2>/dev/null)" == "True" ]]
}

# install_kueue_queues: the example ResourceFlavor, ClusterQueue and LocalQueue
# (hack/local/kueue/queues.yaml); waits until the ClusterQueue is Active.
install_kueue_queues() {
  log "creating Kueue's ResourceFlavor default-flavor, ClusterQueue ${KUEUE_CLUSTER_QUEUE} (nvidia.com/gpu ${LOCAL_KUEUE_GPU_QUOTA}) and LocalQueue default/user-queue"
  kubectl_local apply -f "${LOCAL_CONFIG_DIR}/kueue-queues.yaml" >/dev/null
  wait_until kueue "ClusterQueue ${KUEUE_CLUSTER_QUEUE} Active" "${LOCAL_TIMEOUT}" kueue_cluster_queue_active
}

# generate_configs: kwok stages, scheduler configurations, fake nodes, Kueue's files.
generate_configs() {
  local stages f i
  mkdir -p "${LOCAL_CONFIG_DIR}"
  stages="$(kwok_stage_dir)"
  # Stock stages, minus pod-complete: it would complete pods that our own
  # exit-code stage is meant to control (pods without the annotation run forever).
  {
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml; do
      [[ -f "${stages}/${f}" ]] || die "kwok stage file ${stages}/${f} is missing"
      echo "---"
      cat "${stages}/${f}"
    done
    for f in "${LOCAL_HACK_DIR}"/kwok-stages/*.yaml; do
      echo "---"
      cat "${f}"
    done
    # Every container of every fake pod logs the lines of replica.log, so
    # kubectl logs (and kubectl training logs) have something to show.
    cat <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: replica-logs
spec:
  logs:
  - logsFile: ${LOCAL_CONFIG_DIR}/replica.log
    follow: true
EOF
  } >"${LOCAL_CONFIG_DIR}/kwok-stages.yaml"
  # In the CRI log format kwok's kubelet API parses: time, stream, tag, line.
  printf '2026-01-01T00:00:0%d.000000000Z stdout F fake training replica: %s\n' \
    0 "started" 1 "step 1 loss 0.9" 2 "step 2 loss 0.5" >"${LOCAL_CONFIG_DIR}/replica.log"

  if real_node_running; then
    generate_registry_config
    generate_storage_config
  fi

  cat >"${LOCAL_CONFIG_DIR}/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ${LOCAL_PKI_DIR}/kube-scheduler.kubeconfig
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
EOF

  # One profile under its own name, so it never takes kube-scheduler's pods;
  # coscheduling as in the module's manifests/coscheduling/scheduler-config.yaml
  # (it also sorts the queue, keeping a group's pods together).
  if scheduler_plugins_enabled; then
    cat >"${LOCAL_CONFIG_DIR}/scheduler-plugins.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ${LOCAL_PKI_DIR}/scheduler-plugins.kubeconfig
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
profiles:
- schedulerName: ${SCHEDULER_PLUGINS_NAME}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      # Seconds a group's placed pods wait at Permit for the rest (default 60).
      permitWaitingTimeSeconds: 10
EOF
  fi

  {
    for ((i = 0; i < LOCAL_FAKE_NODES; i++)); do
      cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-${i}
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-${i}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.present: "true"
    topology.tensorstack.dev/block: block-$((i / 4))
    topology.tensorstack.dev/rack: rack-$((i / 2))
status:
  capacity:
    cpu: "${LOCAL_NODE_CPU}"
    memory: "${LOCAL_NODE_MEMORY}"
    pods: "${LOCAL_NODE_PODS}"
    nvidia.com/gpu: "${LOCAL_NODE_GPUS}"
  allocatable:
    cpu: "${LOCAL_NODE_CPU}"
    memory: "${LOCAL_NODE_MEMORY}"
    pods: "${LOCAL_NODE_PODS}"
    nvidia.com/gpu: "${LOCAL_NODE_GPUS}"
EOF
    done
  } >"${LOCAL_CONFIG_DIR}/fake-nodes.yaml"

  if kueue_enabled; then
    generate_kueue_configs
  fi

  sed -e "s|@TRAINING_PORT@|${LOCAL_TRAINING_PORT}|g" \
    -e "s|@CA_BUNDLE@|$(base64 -w0 <"${LOCAL_PKI_DIR}/training-ca.crt")|g" \
    "${LOCAL_HACK_DIR}/training-apiservice.yaml" >"${LOCAL_CONFIG_DIR}/training-apiservice.yaml"
}

# shellcheck source=hack/lib/images.sh
source "${REPO_ROOT}/hack/lib/images.sh"
# shellcheck source=hack/lib/node.sh
source "${REPO_ROOT}/hack/lib/node.sh"
# shellcheck source=hack/lib/registry.sh
source "${REPO_ROOT}/hack/lib/registry.sh"
# shellcheck source=hack/lib/storage.sh
source "${REPO_ROOT}/hack/lib/storage.sh"
# shellcheck source=hack/lib/multikueue.sh
source "${REPO_ROOT}/hack/lib/multikueue.sh"
