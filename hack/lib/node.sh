#!/usr/bin/env bash
# The local stack's real node: containerd and runc run real containers, a
# kubelet registers the node like any other, kube-proxy serves ClusterIP
# Services and CoreDNS serves cluster.local. Sourced by hack/lib/local.sh.
#
# Where things live, so that nothing reaches the host but 127.0.0.1:
#   - a network namespace (NODE_NETNS) holds every node and pod address: the
#     node's NODE_IP on a veth pair inside it, the pods' bridge, kube-proxy's
#     iptables rules, CoreDNS on NODE_IP:53;
#   - nodeproxy (test/localnode/nodeproxy) joins it to the host: inside the
#     namespace NODE_IP:APISERVER_PORT and 127.0.0.1:APISERVER_PORT lead to
#     kube-apiserver on the host; kube-apiserver reaches kubelets and pods
#     through nodeproxy's HTTP CONNECT (its egress selector);
#   - a private mount namespace (held by a `sleep` process) holds every mount
#     of containerd and the kubelet, with /var/lib and /var/log overlaid and
#     /run bound to the node's directory: the paths those programs write
#     whatever their flags say stay off the host, and their mounts end with
#     the namespace;
#   - cgroups under NODE_CGROUP in every cgroup v1 hierarchy (kubelet's
#     cgroupRoot), removed on the way down.
# State: _output/local/node (containerd's root, the kubelet's root, configs).
# shellcheck disable=SC2034

# LOCAL_REAL_NODE: 1 (default) brings up the real node where it can run; 0
# leaves it out.
: "${LOCAL_REAL_NODE:=1}"

NODE_NAME="real-node"
NODE_DIR="${LOCAL_DIR}/node"
NODE_NETNS="tensorstack-$(printf '%s' "${LOCAL_DIR}" | sha256sum | cut -c1-8)"
NODE_IP="10.200.0.1"
NODE_PEER_IP="10.200.0.2"
NODE_POD_CIDR="10.244.0.0/24"
NODE_CGROUP="tensorstack-node-$(printf '%s' "${LOCAL_DIR}" | sha256sum | cut -c1-8)"
NODE_SOCKET="${NODE_DIR}/run/containerd.sock"
# kube-apiserver's egress to kubelets and pods: nodeproxy's HTTP CONNECT.
NODE_EGRESS_SOCKET="${LOCAL_DIR}/node-egress.sock"
# The real node is tainted; hack/local/real-node.yaml's admission policy
# gives pods whose images are all under REAL_NODE_IMAGE_PREFIX the toleration
# and this node selector. Other pods stay on the kwok nodes.
NODE_TAINT="tensorstack.dev/real-node"
NODE_LABEL="tensorstack.dev/node"
# Machine-wide sysctls the kubelet sets at every start; saved and restored.
NODE_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)

real_node_enabled() {
  [[ "${LOCAL_REAL_NODE}" != "0" ]]
}

# real_node_running: this stack runs the real node (hack/local-up.sh decides).
real_node_running() {
  [[ "${LOCAL_REAL_NODE_RUNNING}" == 1 ]]
}

# node_cannot_run prints why the real node cannot run here, in one line, and
# succeeds; fails when it can.
node_cannot_run() {
  local c
  if [[ "$(id -u)" != 0 ]]; then
    echo "it needs root (network and mount namespaces, cgroups)"
    return 0
  fi
  for c in cpu memory pids devices freezer; do
    if [[ ! -d "/sys/fs/cgroup/${c}" && ! -d "/sys/fs/cgroup/cpu,cpuacct" ]]; then
      echo "no cgroup v1 hierarchy for ${c} under /sys/fs/cgroup (the kubelet runs here with cgroupfs on cgroup v1)"
      return 0
    fi
  done
  if ! grep -qw overlay /proc/filesystems; then
    echo "the kernel has no overlay file system (containerd's snapshotter)"
    return 0
  fi
  for c in ip nsenter unshare; do
    if ! command -v "${c}" >/dev/null 2>&1; then
      echo "${c} is not installed"
      return 0
    fi
  done
  return 1
}

# node_binaries_missing prints the node's binaries that are not built.
node_binaries_missing() {
  local b
  for b in containerd ctr containerd-shim-runc-v2 runc kubelet kube-proxy coredns nodeproxy \
    cni/bridge cni/host-local cni/loopback cni/portmap registry local-path-provisioner; do
    [[ -x "${BIN_DIR}/${b}" ]] || echo "${b}"
  done
  [[ -f "${PAUSE_ARCHIVE}" ]] || echo "${PAUSE_ARCHIVE#"${REPO_ROOT}/"}"
  [[ -f "${TRAINING_ARCHIVE}" ]] || echo "${TRAINING_ARCHIVE#"${REPO_ROOT}/"}"
}

# node_nsenter COMMAND...: the command line that runs COMMAND in the node's
# network and mount namespaces, in the global array NSENTER.
node_nsenter() {
  NSENTER=(nsenter --net="/run/netns/${NODE_NETNS}" --mount="/proc/$(cat "${LOCAL_PID_DIR}/node-holder.pid")/ns/mnt" -- "$@")
}

# in_node COMMAND...: runs a command in the node's network and mount namespaces.
in_node() {
  local NSENTER
  node_nsenter "$@"
  "${NSENTER[@]}"
}

node_pid_file() {
  printf '%s/node-%s.pid\n' "${LOCAL_PID_DIR}" "$1"
}

# node_start NAME ARGS...: starts a node component in the node's
# namespaces (nodeproxy on the host), in its own session.
node_start() {
  local name="$1" log="${LOCAL_LOG_DIR}/$1.log" pid
  shift
  {
    printf '==== %s starting %s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "${name}"
    printf '%q ' "$@"
    printf '\n'
  } >>"${log}"
  local NSENTER=("$@")
  if [[ "${name}" != nodeproxy ]]; then
    node_nsenter "$@"
  fi
  setsid "${NSENTER[@]}" </dev/null >>"${log}" 2>&1 3>&- &
  pid=$!
  echo "${pid}" >"$(node_pid_file "${name}")"
  log "started ${name} (pid ${pid}, log ${log#"${REPO_ROOT}/"})"
}

# node_wait NAME WHAT COMMAND...: waits until COMMAND succeeds, failing early
# when the component exited.
node_wait() {
  local name="$1" what="$2" start=${SECONDS} pid
  shift 2
  while ! "$@" >/dev/null 2>&1; do
    pid="$(cat "$(node_pid_file "${name}")" 2>/dev/null || true)"
    if ! pid_alive "${pid}"; then
      show_log_tail "${name}"
      die "${name} exited while waiting for ${what}; see ${LOCAL_LOG_DIR#"${REPO_ROOT}/"}/${name}.log"
    fi
    if ((SECONDS - start >= LOCAL_TIMEOUT)); then
      show_log_tail "${name}"
      die "timed out after ${LOCAL_TIMEOUT}s waiting for ${what}"
    fi
    sleep 0.5
  done
  log "${what}: ok after $((SECONDS - start))s"
}

# node_generate_pki: the node's credentials. The kubelet is system:node:NAME
# in system:nodes (the Node authorizer), kube-proxy system:kube-proxy (the
# bootstrap role system:node-proxier), CoreDNS its own user bound in
# hack/local/real-node.yaml. The kubelet serves with a certificate of the
# cluster CA, which kube-apiserver checks (--kubelet-certificate-authority).
node_generate_pki() {
  local pki="${LOCAL_PKI_DIR}" server="https://127.0.0.1:${LOCAL_APISERVER_PORT}"
  pki_cert "${pki}" ca kubelet "/O=system:nodes/CN=system:node:${NODE_NAME}" client
  pki_cert "${pki}" ca kubelet-serving "/CN=${NODE_NAME}" server "${NODE_IP}" "${NODE_NAME}"
  pki_cert "${pki}" ca kube-proxy "/CN=system:kube-proxy" client
  pki_cert "${pki}" ca coredns "/CN=system:coredns" client
  write_kubeconfig "${pki}/kubelet.kubeconfig" "${server}" "${pki}/ca.crt" "${pki}/kubelet.crt" "${pki}/kubelet.key" "system:node:${NODE_NAME}"
  write_kubeconfig "${pki}/kube-proxy.kubeconfig" "${server}" "${pki}/ca.crt" "${pki}/kube-proxy.crt" "${pki}/kube-proxy.key" system:kube-proxy
  write_kubeconfig "${pki}/coredns.kubeconfig" "${server}" "${pki}/ca.crt" "${pki}/coredns.crt" "${pki}/coredns.key" system:coredns
}

# node_generate_configs: containerd, CNI, kubelet, kube-proxy, CoreDNS.
node_generate_configs() {
  local cfg="${NODE_DIR}/config"
  mkdir -p "${cfg}/cni" "${cfg}/registries/${LOCAL_REGISTRY}" "${NODE_DIR}/run" "${NODE_DIR}/containerd" "${NODE_DIR}/kubelet" "${NODE_DIR}/overlay"
  # Version 3. NRI and the opt plugin are off: they open /var/run/nri and
  # create /opt/containerd. The OOM score adjustment is restricted because
  # root here lacks CAP_SYS_RESOURCE for the sandbox's -998.
  cat >"${cfg}/containerd.toml" <<EOF
version = 3
root = "${NODE_DIR}/containerd/root"
state = "${NODE_DIR}/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${NODE_SOCKET}"

[ttrpc]
  address = "${NODE_SOCKET}.ttrpc"

[debug]
  address = "${NODE_SOCKET}.debug"

# /run is the node's run directory in its mount namespace (node_holder_up),
# and containerd allows a socket_dir of 42 characters at most.
[plugins.'io.containerd.shim.v1.manager']
  socket_dir = "/run/s"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${PAUSE_IMAGE}"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "${cfg}/registries"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["${BIN_DIR}/cni"]
    conf_dir = "${cfg}/cni"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "${BIN_DIR}/runc"
        Root = "${NODE_DIR}/run/runc"
        SystemdCgroup = false
EOF
  # The stack's registry (hack/lib/registry.sh) speaks plain HTTP on loopback,
  # which nodeproxy forwards into the namespace.
  cat >"${cfg}/registries/${LOCAL_REGISTRY}/hosts.toml" <<EOF
server = "http://${LOCAL_REGISTRY}"

[host."http://${LOCAL_REGISTRY}"]
  capabilities = ["pull", "resolve"]
EOF
  # Pods on one bridge. No masquerade and no default route: traffic has
  # nowhere to leave the namespace to.
  cat >"${cfg}/cni/10-pods.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "${NODE_POD_CIDR}"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "${NODE_DIR}/cni-ipam"}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  : >"${cfg}/resolv.conf"
  cat >"${cfg}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 and no systemd here (hack/lib/node.sh).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /${NODE_CGROUP}
failSwapOn: false
address: ${NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: ${LOCAL_PKI_DIR}/kubelet-serving.crt
tlsPrivateKeyFile: ${LOCAL_PKI_DIR}/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${LOCAL_PKI_DIR}/ca.crt
authorization:
  mode: Webhook
clusterDomain: cluster.local
clusterDNS: [${NODE_IP}]
resolvConf: ${cfg}/resolv.conf
registerWithTaints:
- key: ${NODE_TAINT}
  value: "true"
  effect: NoSchedule
# A test node: no eviction for disk or memory pressure, no image GC.
evictionHard:
  memory.available: "0%"
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
imageGCHighThresholdPercent: 100
serializeImagePulls: false
podLogsDir: ${NODE_DIR}/pods-logs
nodeStatusReportFrequency: 10s
maxPods: 50
EOF
  cat >"${cfg}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: ${LOCAL_PKI_DIR}/kube-proxy.kubeconfig
hostnameOverride: ${NODE_NAME}
bindAddress: ${NODE_IP}
clusterCIDR: ${NODE_POD_CIDR}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Zero keeps the machine-wide conntrack sysctls as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
  # cluster.local and reverse lookups from the cluster; every other name gets
  # NXDOMAIN at once, as nothing outside the namespace is reachable. Two
  # server blocks, since CoreDNS orders plugins by its own list, not the
  # Corefile's, and template would come before kubernetes in one block.
  cat >"${cfg}/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${LOCAL_PKI_DIR}/coredns.kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loadbalance
}
.:53 {
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
EOF
  cat >"${cfg}/egress-selector.yaml" <<EOF
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: ${NODE_EGRESS_SOCKET}
EOF
}

# node_network_up: the namespace, its loopback and the node's address.
node_network_up() {
  ip netns add "${NODE_NETNS}"
  local ns=(ip netns exec "${NODE_NETNS}")
  "${ns[@]}" ip link set lo up
  "${ns[@]}" ip link add tsnode0 type veth peer name tsnode1
  "${ns[@]}" ip addr add "${NODE_IP}/24" dev tsnode0
  "${ns[@]}" ip addr add "${NODE_PEER_IP}/24" dev tsnode1
  "${ns[@]}" ip link set tsnode0 up
  "${ns[@]}" ip link set tsnode1 up
  # ClusterIPs are translated by kube-proxy's rules; locally made packets
  # need a route before the translation.
  "${ns[@]}" ip route add "${SERVICE_CIDR}" dev tsnode0
  "${ns[@]}" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.ipv4.conf.all.route_localnet=1
}

# node_holder_up: the private mount namespace, kept by a sleeping process.
node_holder_up() {
  local upper="${NODE_DIR}/overlay" pid d
  setsid unshare --mount --propagation private -- sleep infinity </dev/null >/dev/null 2>&1 3>&- &
  pid=$!
  echo "${pid}" >"${LOCAL_PID_DIR}/node-holder.pid"
  while [[ "$(readlink "/proc/${pid}/ns/mnt" 2>/dev/null)" == "$(readlink /proc/self/ns/mnt)" ]]; do sleep 0.05; done
  for d in var-lib var-log; do
    mkdir -p "${upper}/${d}/upper" "${upper}/${d}/work"
  done
  nsenter --mount="/proc/${pid}/ns/mnt" -- sh -ec "
    mount -t overlay overlay -o lowerdir=/var/lib,upperdir=${upper}/var-lib/upper,workdir=${upper}/var-lib/work /var/lib
    mount -t overlay overlay -o lowerdir=/var/log,upperdir=${upper}/var-log/upper,workdir=${upper}/var-log/work /var/log
    mount --bind '${NODE_DIR}/run' /run
    mount --make-rshared /
  "
}

# node_cgroups_up: the kubelet's cgroupRoot in every v1 hierarchy.
node_cgroups_up() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -L "${h%/}" || ! -f "${h}cgroup.procs" ]] && continue
    mkdir -p "${h}${NODE_CGROUP}"
  done
  # cpuset needs its parent's cpus and mems before it takes tasks.
  if [[ -d "/sys/fs/cgroup/cpuset/${NODE_CGROUP}" ]]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/${NODE_CGROUP}/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/${NODE_CGROUP}/cpuset.mems"
  fi
}

# node_import_images loads the images into containerd's k8s.io namespace.
node_import_images() {
  local archive
  for archive in "${PAUSE_ARCHIVE}" "${TRAINING_ARCHIVE}"; do
    local start=${SECONDS}
    in_node "${BIN_DIR}/ctr" --address "${NODE_SOCKET}" -n k8s.io images import --local "${archive}" \
      >>"${LOCAL_LOG_DIR}/containerd.log" 2>&1 || die "importing ${archive} into containerd failed; see ${LOCAL_LOG_DIR#"${REPO_ROOT}/"}/containerd.log"
    log "imported ${archive#"${REPO_ROOT}/"} ($(du -h "${archive}" | cut -f1)) in $((SECONDS - start))s"
  done
}

node_ready() {
  [[ "$(kubectl_local get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# node_prepare: the node's namespaces, cgroups and nodeproxy, before
# kube-apiserver starts: its egress selector sends webhook and aggregated API
# traffic through nodeproxy too.
node_prepare() {
  local name
  log "preparing the real node ${NODE_NAME} (network namespace ${NODE_NETNS}, node IP ${NODE_IP}, pods ${NODE_POD_CIDR})"
  mkdir -p "${NODE_DIR}"
  for name in "${NODE_SYSCTLS[@]}"; do
    printf '%s=%s\n' "${name}" "$(sysctl -n "${name}")"
  done >"${NODE_DIR}/sysctls.saved"
  node_network_up
  node_holder_up
  node_cgroups_up
  node_start nodeproxy "${BIN_DIR}/nodeproxy" -netns "/run/netns/${NODE_NETNS}" \
    -forward "127.0.0.1:${LOCAL_APISERVER_PORT}=127.0.0.1:${LOCAL_APISERVER_PORT}" \
    -forward "${NODE_IP}:${LOCAL_APISERVER_PORT}=127.0.0.1:${LOCAL_APISERVER_PORT}" \
    -forward "${LOCAL_REGISTRY}=${LOCAL_REGISTRY}" \
    -egress "${NODE_EGRESS_SOCKET}"
  node_wait nodeproxy "nodeproxy on ${NODE_EGRESS_SOCKET#"${REPO_ROOT}/"}" test -S "${NODE_EGRESS_SOCKET}"
}

# node_up: the real node, from containerd to a Ready node with DNS, once
# the control plane serves (after node_prepare).
node_up() {
  local start=${SECONDS}
  log "starting the real node ${NODE_NAME}"
  sed -e "s|@NODE_IP@|${NODE_IP}|g" -e "s|@APISERVER_PORT@|${LOCAL_APISERVER_PORT}|g" \
    -e "s|@IMAGE_PREFIX@|${REAL_NODE_IMAGE_PREFIX}|g" -e "s|@REGISTRY_PREFIX@|${LOCAL_REGISTRY}/|g" -e "s|@NODE_TAINT@|${NODE_TAINT}|g" \
    -e "s|@NODE_LABEL_KEY@|${NODE_LABEL}|g" -e "s|@NODE_LABEL_KEY_PATCH@|${NODE_LABEL//\//~1}|g" \
    "${LOCAL_HACK_DIR}/real-node.yaml" | kubectl_local apply -f - >/dev/null
  node_start containerd "${BIN_DIR}/containerd" --config "${NODE_DIR}/config/containerd.toml"
  node_wait containerd "containerd on ${NODE_SOCKET#"${REPO_ROOT}/"}" \
    in_node "${BIN_DIR}/ctr" --address "${NODE_SOCKET}" version
  node_import_images
  node_start_kubelet
  node_start kube-proxy "${BIN_DIR}/kube-proxy" --config="${NODE_DIR}/config/kube-proxy.yaml" --v=1
  node_start coredns "${BIN_DIR}/coredns" -conf "${NODE_DIR}/config/Corefile"
  node_wait kubelet "node ${NODE_NAME} Ready" node_ready
  node_wait coredns "CoreDNS ready on ${NODE_IP}:53" in_node curl -fsS --max-time 2 http://127.0.0.1:8181/ready
  node_wait kube-proxy "kube-proxy healthy" in_node curl -fsS --max-time 2 http://127.0.0.1:10256/healthz
  log "real node ${NODE_NAME} ready in $((SECONDS - start))s"
}

# node_start_kubelet starts the node's kubelet; node_up, and
# hack/local-restart.sh for a node that comes back.
node_start_kubelet() {
  node_start kubelet "${BIN_DIR}/kubelet" --config="${NODE_DIR}/config/kubelet.yaml" \
    --kubeconfig="${LOCAL_PKI_DIR}/kubelet.kubeconfig" --container-runtime-endpoint="unix://${NODE_SOCKET}" \
    --root-dir="${NODE_DIR}/kubelet" --node-ip="${NODE_IP}" --hostname-override="${NODE_NAME}" \
    --node-labels="${NODE_LABEL}=real" --v=1
}

# node_kill_cgroup_tasks kills every process in the node's cgroups.
node_kill_cgroup_tasks() {
  local round pids
  for round in 1 2 3 4 5 6 7 8 9 10; do
    pids="$(find /sys/fs/cgroup/*/"${NODE_CGROUP}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u || true)"
    [[ -n "${pids}" ]] || return 0
    # shellcheck disable=SC2086
    kill -KILL ${pids} 2>/dev/null || true
    sleep 0.2
  done
}

# node_remove_cgroups removes the node's cgroups, deepest first.
node_remove_cgroups() {
  local d
  while read -r d; do
    rmdir "${d}" 2>/dev/null || true
  done < <(find /sys/fs/cgroup/*/"${NODE_CGROUP}" -depth -type d 2>/dev/null)
}

# node_processes prints pids of processes that run a binary of the node
# (containerd's shims, left by a crash, among them) or hold its namespace.
# Only this stack's: their command lines name its directory or namespace, so
# a second stack beside it (the MultiKueue worker) leaves its node alone.
node_processes() {
  local link pid exe holder=""
  [[ -f "${LOCAL_PID_DIR}/node-holder.pid" ]] && holder="$(cat "${LOCAL_PID_DIR}/node-holder.pid")"
  while read -r link; do
    pid="${link#/proc/}"
    pid="${pid%/exe}"
    exe="$(readlink "${link}" 2>/dev/null)" || continue
    exe="${exe% (deleted)}"
    case "${exe#"${BIN_DIR}/"}" in
      containerd | containerd-shim-runc-v2 | kubelet | kube-proxy | coredns | nodeproxy | runc)
        if tr '\0' '\n' <"/proc/${pid}/cmdline" 2>/dev/null | grep -qF -e "${LOCAL_DIR}/" -e "${NODE_NETNS}"; then
          echo "${pid}"
        fi
        ;;
    esac
  done < <(find /proc -mindepth 2 -maxdepth 2 -name exe -lname "${BIN_DIR}/*" 2>/dev/null)
  if [[ -n "${holder}" ]] && pid_alive "${holder}" && tr '\0' ' ' <"/proc/${holder}/cmdline" | grep -q '^sleep infinity'; then
    echo "${holder}"
  fi
}

# node_stop NAME stops a node component from its pid file; it fails when
# none ran.
node_stop() {
  local name="$1" pid
  pid="$(cat "$(node_pid_file "${name}")" 2>/dev/null || true)"
  pid_alive "${pid}" || return 1
  log "stopping ${name} (pid ${pid})"
  stop_pid "${name}" "${pid}" 10
}

# node_down stops the real node and removes what it made on the host:
# processes, the namespaces (with their mounts, links and iptables rules),
# the cgroups; and puts back the sysctls the kubelet changed. Safe to run
# when no node ran.
node_down() {
  local name pid any=0 line
  for name in kubelet kube-proxy coredns; do
    node_stop "${name}" && any=1
  done
  if [[ -d /sys/fs/cgroup/memory/"${NODE_CGROUP}" ]]; then
    any=1
    node_kill_cgroup_tasks
  fi
  for name in containerd nodeproxy; do
    node_stop "${name}" && any=1
  done
  for pid in $(node_processes); do
    kill -KILL "${pid}" 2>/dev/null || true
    wait "${pid}" 2>/dev/null || true
    any=1
  done
  node_kill_cgroup_tasks
  node_remove_cgroups
  if ip netns list 2>/dev/null | grep -qw "${NODE_NETNS}"; then
    ip netns del "${NODE_NETNS}" || log "WARNING: could not delete network namespace ${NODE_NETNS}"
    any=1
  fi
  if [[ -f "${NODE_DIR}/sysctls.saved" ]]; then
    while read -r line; do
      sysctl -qw "${line}" || log "WARNING: could not restore ${line}"
    done <"${NODE_DIR}/sysctls.saved"
    rm -f "${NODE_DIR}/sysctls.saved"
  fi
  rm -f "${LOCAL_PID_DIR}"/node-*.pid
  if ((any)); then
    log "real node stopped"
  fi
  return 0
}

# local_down_checked stops the stack (hack/local-down.sh) and fails when the
# real node left anything of its own on the host, saying what.
local_down_checked() {
  local left
  "${REPO_ROOT}/hack/local-down.sh" || log "WARNING: hack/local-down.sh failed"
  left="$(node_leftovers)"
  if [[ -n "${left}" ]]; then
    log "ERROR: the real node left on the host after hack/local-down.sh:"
    printf '  %s\n' "${left}" >&2
    return 1
  fi
}

# node_leftovers prints what the real node left on the host, one line each:
# nothing after node_down.
node_leftovers() {
  local pid
  for pid in $(node_processes); do
    echo "process ${pid}: $(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)"
  done
  ip netns list 2>/dev/null | grep -w "${NODE_NETNS}" | sed 's/^/network namespace /' || true
  ip -o link show 2>/dev/null | grep -E 'tsnode|cni0|veth' | sed 's/^/link on the host: /' || true
  grep -F "${NODE_DIR}" /proc/self/mountinfo | sed 's/^/mount on the host: /' || true
  find /sys/fs/cgroup/*/"${NODE_CGROUP}" -maxdepth 0 -type d 2>/dev/null | sed 's/^/cgroup /' || true
  if command -v iptables-save >/dev/null 2>&1; then
    iptables-save 2>/dev/null | grep -E 'KUBE-|CNI-' | head -n 3 | sed 's/^/iptables rule on the host: /' || true
  fi
  if [[ -f "${NODE_DIR}/sysctls.saved" ]]; then
    echo "sysctls not restored: $(tr '\n' ' ' <"${NODE_DIR}/sysctls.saved")"
  fi
}
