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

package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// registry0 is the stack's image registry, as image references name it.
func (c *Cluster) registry0() string { return "127.0.0.1:" + c.port(c.Settings.RegistryPort) }

// nodeproxy joins the network namespace to the host: the gateway's
// kube-apiserver and registry ports lead to them on 127.0.0.1, and
// kube-apiserver reaches kubelets, pods and Services through its HTTP
// CONNECT socket, which dials from the first node's namespace: there
// kube-proxy's rules turn a ClusterIP (an aggregated API's Service) into a
// pod's address, and every node and pod is routed.
func (c *Cluster) nodeproxy() *Component {
	port := c.port(c.Settings.APIServerPort)
	return &Component{
		Name:   "nodeproxy",
		Binary: c.bin("nodeproxy"),
		Args: []string{
			"-netns", "/run/netns/" + c.networkNetNS(),
			"-forward", networkGateway + ":" + port + "=127.0.0.1:" + port,
			"-forward", networkGateway + ":" + c.port(c.Settings.RegistryPort) + "=" + c.registry0(),
			"-egress", c.egressSocket(),
			"-egress-netns", "/run/netns/" + c.Nodes[0].NetNS,
		},
		Ready: []Check{{
			What: "nodeproxy on " + relTo(c.Paths.Repo, c.egressSocket()),
			Probe: func(context.Context) error {
				if info, err := os.Stat(c.egressSocket()); err != nil || info.Mode()&os.ModeSocket == 0 {
					return fmt.Errorf("no socket yet")
				}
				return nil
			},
		}},
		After:       []string{"node-network"},
		Restartable: false,
	}
}

func (c *Cluster) egressSocket() string { return filepath.Join(c.Paths.Dir, "node-egress.sock") }

// realNodeObjects are what the real nodes need in the cluster
// (hack/local/real-node.yaml): the admission policy that sends the stack's
// own images to them, CoreDNS' role, the kubernetes Service's endpoint.
func (c *Cluster) realNodeObjects() *Component {
	return &Component{
		Name: "real-node-objects",
		Do: func(ctx context.Context) error {
			manifest, err := c.fillFile("real-node.yaml", map[string]string{
				"GATEWAY_IP":           networkGateway,
				"APISERVER_PORT":       c.port(c.Settings.APIServerPort),
				"IMAGE_PREFIX":         realNodeImagePrefix,
				"REGISTRY_PREFIX":      c.registry0() + "/",
				"NODE_TAINT":           nodeTaint,
				"NODE_LABEL_KEY":       nodeLabel,
				"NODE_LABEL_KEY_PATCH": strings.ReplaceAll(nodeLabel, "/", "~1"),
			})
			if err != nil {
				return err
			}
			return c.kubectl(ctx, manifest, "apply", "-f", "-")
		},
		After: []string{"kube-apiserver"},
	}
}

// registry is CNCF Distribution on 127.0.0.1, storing under the stack's
// directory; the nodes pull from it over plain HTTP through nodeproxy.
func (c *Cluster) registry() *Component {
	return &Component{
		Name:   "registry",
		Binary: c.bin("registry"),
		Args:   []string{"serve", c.config("registry.yaml")},
		Ports:  []Port{{"LOCAL_REGISTRY_PORT", c.Settings.RegistryPort}},
		Ready: []Check{{
			What:  "the image registry on " + c.registry0(),
			Probe: probeURL("http://"+c.registry0()+"/v2/", plainHTTP),
		}},
		After:       []string{"files"},
		Restartable: true,
	}
}

// storage creates the default StorageClass, served by local-path-provisioner
// on the host, which keeps volumes in directories the nodes share.
func (c *Cluster) storage() *Component {
	return &Component{
		Name: "storage",
		Do: func(ctx context.Context) error {
			c.Host.Logf("creating StorageClass %s (the default; local-path-provisioner, volumes in %s)", storageClass, relTo(c.Paths.Repo, c.volumesDir()))
			return c.apply(ctx, c.config("local-path-storage.yaml"))
		},
		After: []string{"kube-apiserver"},
	}
}

func (c *Cluster) volumesDir() string { return filepath.Join(c.Paths.Dir, "volumes") }

func (c *Cluster) localPathProvisioner() *Component {
	log := c.Paths.LogFile("local-path-provisioner")
	return &Component{
		Name:   "local-path-provisioner",
		Binary: c.bin("local-path-provisioner"),
		Args: []string{
			"start",
			"--config=" + c.config("local-path-provisioner.json"),
			"--kubeconfig=" + c.pki("local-path-provisioner.kubeconfig"),
			"--namespace=" + storageNamespace,
			"--helper-image=" + trainingImage,
		},
		Ready: []Check{{
			What: "local-path-provisioner watching claims",
			Probe: func(context.Context) error {
				data, _ := os.ReadFile(log)
				if strings.Contains(string(data), "successfully acquired lease") || strings.Contains(string(data), "Starting provisioner controller") {
					return nil
				}
				return fmt.Errorf("not leading yet")
			},
		}},
		After:       []string{"storage"},
		Restartable: true,
	}
}

// writeNodeFiles writes the registry's and the provisioner's files, the
// egress selector, and each node's containerd, CNI, kubelet, kube-proxy and
// CoreDNS configuration.
func (c *Cluster) writeNodeFiles() error {
	files := map[string]string{
		c.config("registry.yaml"): fmt.Sprintf(`version: 0.1
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
`, filepath.Join(c.Paths.Dir, "registry"), c.registry0(), c.stackID()),
		c.config("local-path-provisioner.json"): fmt.Sprintf(`{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [%q]}]}
`, c.volumesDir()),
		c.config("egress-selector.yaml"): fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
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
	storage, err := c.fillFile("local-path-storage.yaml", map[string]string{
		"NAMESPACE": storageNamespace, "STORAGE_CLASS": storageClass, "HELPER_IMAGE": trainingImage, "VOLUMES": c.volumesDir(),
	})
	if err != nil {
		return err
	}
	files[c.config("local-path-storage.yaml")] = string(storage)
	for _, n := range c.Nodes {
		for name, data := range n.files() {
			files[name] = data
		}
	}
	for _, d := range []string{c.volumesDir(), filepath.Join(c.Paths.Dir, "registry")} {
		if err := c.Host.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(files) {
		if err := c.Host.WriteFile(name, []byte(files[name]), 0o644); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		for _, d := range []string{"run", "containerd", "kubelet", "overlay", "pods-logs"} {
			if err := c.Host.MkdirAll(n.path(d), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// files are the node's configuration files, by path.
func (n Node) files() map[string]string {
	c := n.c
	cfg := func(name string) string { return n.path("config", name) }
	registryServer := "http://" + networkGateway + ":" + c.port(c.Settings.RegistryPort)
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
`, n.storeRoot(), n.path("containerd", "state"), n.socket(), pauseImage, cfg("registries"),
			filepath.Join(c.Paths.Bin, "cni"), cfg("cni"), c.bin("runc"), n.path("run", "runc")),
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
`, n.PodCIDR, n.path("cni-ipam")),
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
`, n.Cgroup, n.IP, c.pki(n.componentName("kubelet-serving")), c.pki("ca.crt"), cfg("resolv.conf"), nodeTaint, n.path("pods-logs")),
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
`, n.path("kube-proxy.kubeconfig"), n.Name, n.IP, clusterPodCIDR),
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
`, n.path("coredns.kubeconfig")),
	}
}

// The machine-wide sysctls are shared by every stack with real nodes: the first to start records the machine's
// own values, and the last to stop puts them back, so that two stacks side by side (make test's lanes) neither
// restore them under each other nor leave the kubelet's values behind. Each stack that holds them has a file in
// sysctlsDir with the machine's values; /run is cleared by a reboot, as the sysctls are.
var sysctlsDir = "/run/tensorstack-localcluster/sysctls"

// sysctlsFile is this stack's hold on the machine-wide sysctls.
func (c *Cluster) sysctlsFile() string { return filepath.Join(sysctlsDir, c.stackID()) }

// withSysctlsLock runs fn holding the lock that orders the stacks' saves and restores.
func withSysctlsLock(fn func() error) error {
	if err := os.MkdirAll(sysctlsDir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(sysctlsDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	return fn()
}

// sysctlHolders lists the stacks' files in sysctlsDir.
func sysctlHolders() ([]string, error) {
	entries, err := os.ReadDir(sysctlsDir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(sysctlsDir, e.Name()))
		}
	}
	return files, nil
}

// saveSysctls records the machine's own values of the sysctls the kubelet changes: read now when no other stack
// holds them, else copied from a stack that does (the kubelet of that one has changed them since). An earlier
// record of this stack (one that crashed) is kept.
func (c *Cluster) saveSysctls(ctx context.Context) error {
	if c.Host.DryRun() {
		_, err := c.Host.Run(ctx, Command{Path: "sysctl", Args: append([]string{"-n"}, nodeSysctls...)})
		return err
	}
	return withSysctlsLock(func() error {
		file := c.sysctlsFile()
		if fileExists(file) {
			return nil
		}
		holders, err := sysctlHolders()
		if err != nil {
			return err
		}
		if len(holders) > 0 {
			original, err := os.ReadFile(holders[0])
			if err != nil {
				return err
			}
			return os.WriteFile(file, original, 0o644)
		}
		var b strings.Builder
		for _, name := range nodeSysctls {
			out, err := exec.Command("sysctl", "-n", name).Output()
			if err != nil {
				return fmt.Errorf("sysctl -n %s: %w", name, err)
			}
			fmt.Fprintf(&b, "%s=%s\n", name, strings.TrimSpace(string(out)))
		}
		return os.WriteFile(file, []byte(b.String()), 0o644)
	})
}

// restoreSysctls lets go of this stack's hold, and puts the machine's values back when no other stack holds them.
func (c *Cluster) restoreSysctls() error {
	if !fileExists(c.sysctlsFile()) {
		return nil // never held (no real nodes, no root): nothing to take the lock for
	}
	return withSysctlsLock(func() error {
		data, err := os.ReadFile(c.sysctlsFile())
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := os.Remove(c.sysctlsFile()); err != nil {
			return err
		}
		others, err := sysctlHolders()
		if err != nil || len(others) > 0 {
			return err
		}
		var errs []string
		for _, line := range strings.Fields(string(data)) {
			if out, err := execOutput("sysctl", "-qw", line); err != nil {
				errs = append(errs, fmt.Sprintf("restoring %s: %v: %s", line, err, out))
			}
		}
		if len(errs) > 0 {
			// Hold on to them, so that the next stop tries again and Leftovers names them.
			_ = os.WriteFile(c.sysctlsFile(), data, 0o644)
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	})
}

// killCgroupTasks kills every process in the node's cgroups.
func (n Node) killCgroupTasks() {
	if n.c.Host.DryRun() {
		n.c.Host.Logf("kill -KILL every process in the cgroups %s", n.Cgroup)
		return
	}
	for round := 0; round < 10; round++ {
		pids := n.cgroupPIDs()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (n Node) cgroupPIDs() []int {
	seen := map[int]bool{}
	var pids []int
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.Cgroup)
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the node's cgroups, deepest first.
func (n Node) removeCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.Cgroup)
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// nodeBinaries are what runs on a real node, by path.
func (c *Cluster) nodeBinaries() map[string]bool {
	out := map[string]bool{}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "kubelet", "kube-proxy", "coredns", "nodeproxy", "runc"} {
		out[c.bin(b)] = true
	}
	return out
}

// nodeProcesses are the processes of this stack's nodes (containerd's
// shims a crash left among them) and their namespaces' holders: those whose
// command lines name its directory or namespaces.
func (c *Cluster) nodeProcesses() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	bins := c.nodeBinaries()
	id := c.stackID()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe := processExe(pid)
		args := strings.Join(processCmdline(pid), " ")
		mine := strings.Contains(args, c.Paths.Dir+"/") || strings.Contains(args, id)
		holder := exe != "" && filepath.Base(exe) == "sleep" && args == "sleep infinity" && c.isHolder(pid)
		if (bins[exe] && mine) || holder {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isHolder: pid is the holder of one of this stack's nodes' mount
// namespaces, by its pid file.
func (c *Cluster) isHolder(pid int) bool {
	for _, n := range c.allNodeSlots() {
		if readPID(n.holderPIDFile()) == pid {
			return true
		}
	}
	return false
}

// stackNetNSes are the network namespaces of this stack that exist.
func (c *Cluster) stackNetNSes() []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		if e.Name() == c.networkNetNS() || strings.HasPrefix(e.Name(), "tsnode-"+c.stackID()+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func killPID(pid int) error {
	err := syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && pidAlive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func execOutput(path string, args ...string) (string, error) {
	out, err := exec.Command(path, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Leftovers lists what the real nodes left on the machine, one line each:
// nothing after Down.
func (c *Cluster) Leftovers() []string {
	var out []string
	for _, pid := range c.nodeProcesses() {
		out = append(out, fmt.Sprintf("process %d: %s", pid, strings.Join(processCmdline(pid), " ")))
	}
	for _, ns := range c.stackNetNSes() {
		out = append(out, "network namespace "+ns)
	}
	if links, err := execOutput("ip", "-o", "link", "show"); err == nil {
		for _, l := range strings.Split(links, "\n") {
			if strings.Contains(l, "tsveth") || strings.Contains(l, bridgeName) || strings.Contains(l, "cni0") {
				out = append(out, "link on the host: "+l)
			}
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mounts), "\n") {
			if strings.Contains(l, filepath.Join(c.Paths.Dir, "nodes")) {
				out = append(out, "mount on the host: "+l)
			}
		}
	}
	for _, n := range c.allNodeSlots() {
		if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.Cgroup); len(dirs) > 0 {
			out = append(out, "cgroup "+strings.Join(dirs, " "))
		}
	}
	if rules, err := execOutput("iptables-save"); err == nil {
		for _, l := range strings.Split(rules, "\n") {
			if strings.Contains(l, "KUBE-") || strings.Contains(l, "CNI-") {
				out = append(out, "iptables rule on the host: "+l)
				break
			}
		}
	}
	if fileExists(c.sysctlsFile()) {
		data, _ := os.ReadFile(c.sysctlsFile())
		out = append(out, "sysctls not restored: "+strings.Join(strings.Fields(string(data)), " "))
	}
	return out
}
