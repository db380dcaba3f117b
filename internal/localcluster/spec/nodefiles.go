/*
Copyright The TensorStack Training Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package spec

import (
	"fmt"
	"path/filepath"
	"sort"
)

// nodeFiles are the registry's and the provisioner's files, the egress
// selector, and each node's containerd, CNI, kubelet, kube-proxy and CoreDNS
// configuration, with the directories they name.
func (c Config) nodeFiles(src Source) ([]File, error) {
	files := map[string]string{
		c.ConfigFile("registry.yaml"): fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  # Served on loopback only; the nodes reach it through nodeproxy.
  secret: local-registry-%s
`, filepath.Join(c.Paths.Dir, "registry"), c.registry0(), c.StackID()),
		c.ConfigFile("local-path-provisioner.json"): fmt.Sprintf(`{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [%q]}]}
`, c.volumesDir()),
		c.ConfigFile("egress-selector.yaml"): fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, c.egressSocket()),
	}
	storage, err := c.fillFile(src, "local-path-storage.yaml", map[string]string{
		"NAMESPACE": storageNamespace, "STORAGE_CLASS": storageClass, "HELPER_IMAGE": trainingImage, "VOLUMES": c.volumesDir(),
	})
	if err != nil {
		return nil, err
	}
	files[c.ConfigFile("local-path-storage.yaml")] = string(storage)
	for _, n := range c.Nodes {
		for name, data := range c.nodeConfigFiles(n) {
			files[name] = data
		}
	}
	out := []File{directory(c.volumesDir()), directory(filepath.Join(c.Paths.Dir, "registry"))}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, File{Path: name, Data: []byte(files[name]), Mode: 0o644})
	}
	for _, n := range c.Nodes {
		for _, d := range []string{"run", "containerd", "kubelet", "overlay", "pods-logs"} {
			out = append(out, directory(n.Path(d)))
		}
	}
	return out, nil
}

// nodeConfigFiles are the node's configuration files, by path.
func (c Config) nodeConfigFiles(n Node) map[string]string {
	cfg := func(name string) string { return n.Path("config", name) }
	registryServer := "http://" + networkGateway + ":" + port(c.Settings.RegistryPort)
	return map[string]string{
		// Version 3. NRI and the opt plugin are off: they open /var/run/nri
		// and create /opt/containerd. The OOM score adjustment is restricted:
		// root here lacks CAP_SYS_RESOURCE for the sandbox's -998.
		cfg("containerd.toml"): fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = "%[3]s.ttrpc"

[debug]
  address = "%[3]s.debug"

# /run is the node's own run directory in its mount namespace, and
# containerd allows a socket_dir of 42 characters at most.
[plugins.'io.containerd.shim.v1.manager']
  socket_dir = "/run/s"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[4]q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %[5]q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[6]q]
    conf_dir = %[7]q
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[8]q
        Root = %[9]q
        SystemdCgroup = false
`, n.StoreRoot(), n.Path("containerd", "state"), n.Socket(), pauseImage, cfg("registries"),
			filepath.Join(c.Paths.Bin, "cni"), cfg("cni"), c.Bin("runc"), n.Path("run", "runc")),
		// Image references name the registry on the host's loopback; inside
		// the node it is the gateway's port, which nodeproxy forwards.
		cfg(filepath.Join("registries", c.registry0(), "hosts.toml")): fmt.Sprintf(`server = %[1]q

[host.%[1]q]
  capabilities = ["pull", "resolve"]
`, registryServer),
		// Pods on one bridge per node. No masquerade and no default route:
		// traffic has nowhere to leave to; other nodes' pods are routed.
		cfg(filepath.Join("cni", "10-pods.conflist")): fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.PodCIDR, n.Path("cni-ipam")),
		cfg("resolv.conf"): "",
		cfg("kubelet.yaml"): fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 and no systemd here.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
failSwapOn: false
address: %[2]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %[3]s.crt
tlsPrivateKeyFile: %[3]s.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
clusterDomain: cluster.local
clusterDNS: [%[2]s]
resolvConf: %[5]s
registerWithTaints:
- key: %[6]s
  value: "true"
  effect: NoSchedule
# A test node: no eviction for disk or memory pressure, no image GC.
evictionHard:
  memory.available: "0%%"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
imageGCHighThresholdPercent: 100
serializeImagePulls: false
podLogsDir: %[7]s
nodeStatusReportFrequency: 10s
maxPods: 50
# Containerd's event for a container's exit has the kubelet look at the pod
# at once, instead of at its next relist (once a second): a job's outcome
# is known that much sooner (docs/benchmarks.md, bench-real).
featureGates:
  EventedPLEG: true
`, n.Cgroup, n.IP, c.PKI(n.ComponentName("kubelet-serving")), c.PKI("ca.crt"), cfg("resolv.conf"), nodeTaint, n.Path("pods-logs")),
		cfg("kube-proxy.yaml"): fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Zero keeps the machine-wide conntrack sysctls as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.Path("kube-proxy.kubeconfig"), n.Name, n.IP, clusterPodCIDR),
		// cluster.local and reverse lookups from the cluster; any other name
		// gets NXDOMAIN at once, as nothing outside is reachable. Two server
		// blocks: CoreDNS orders plugins by its own list, and template would
		// come before kubernetes in one.
		cfg("Corefile"): fmt.Sprintf(`cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
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
`, n.Path("coredns.kubeconfig")),
	}
}
