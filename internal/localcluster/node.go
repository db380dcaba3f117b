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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"tensorstack.dev/training/internal/skips"
)

// The real nodes' network. A namespace of its own (the "network", as
// docker's bridge is kind's) holds a bridge with the gateway address; each
// node's namespace joins it by a veth pair and routes the other nodes' pod
// CIDRs through them. Nothing has a default route: no packet can leave.
const (
	networkGateway = "10.200.0.1"
	networkPrefix  = "10.200.0."
	networkBits    = "/24"
	nodeIPBase     = 10 // node i has 10.200.0.(10+i)
	podCIDRPrefix  = "10.244."
	// clusterPodCIDR holds every node's pod CIDR.
	clusterPodCIDR = "10.244.0.0/16"
	bridgeName     = "tsbr0"
	maxRealNodes   = 8

	// The real nodes are tainted; hack/local/real-node.yaml's admission
	// policy gives pods whose images are all the stack's own the toleration
	// and the node selector. Other pods stay on the kwok nodes.
	nodeTaint = "tensorstack.dev/real-node"
	nodeLabel = "tensorstack.dev/node"
	// Topology labels: each real node is a rack of its own; two racks make a
	// zone.
	zoneLabel  = "topology.kubernetes.io/zone"
	rackLabel  = "topology.tensorstack.dev/rack"
	blockLabel = "topology.tensorstack.dev/block"

	// Images under this prefix exist only on the real nodes.
	realNodeImagePrefix = "localhost/tensorstack/"
	pauseImage          = "localhost/tensorstack/pause:v1"
	trainingImage       = "localhost/tensorstack/training:v1"

	// The archives a node imports (hack/build-node-images.sh builds them).
	pauseArchive    = "pause.tar"
	trainingArchive = "training.tar"
	// Open MPI 5's training image, for the tests that run an MPIJob with it:
	// built by the test builds only, so a node imports it when it is there.
	mpi5TrainingArchive = "training-mpi5.tar"

	storageNamespace = "local-path-storage"
	storageClass     = "local-path"
	storageUser      = "system:local-path-provisioner"
)

// nodeSysctls are machine-wide sysctls the kubelet sets at every start; they
// are saved before the first node starts and put back after the last stops.
var nodeSysctls = []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops"}

// Node is one real node: containerd and runc run its containers, a kubelet
// registers it, kube-proxy serves ClusterIP Services and CoreDNS answers
// cluster.local, all in network and mount namespaces of its own.
type Node struct {
	c     *Cluster
	Index int
	Name  string
	IP    string
	// PodCIDR is the node's pods' addresses, routed from the other nodes.
	PodCIDR string
	NetNS   string
	Cgroup  string
	Dir     string
	Zone    string
	Rack    string
}

// stackID tells this stack's namespaces and cgroups from another's (the
// MultiKueue worker beside it).
func (c *Cluster) stackID() string {
	sum := sha256.Sum256([]byte(c.Paths.Dir))
	return hex.EncodeToString(sum[:])[:8]
}

func (c *Cluster) networkNetNS() string { return "tsnet-" + c.stackID() }

// nodeName follows kind's workers: real-node, real-node2, real-node3.
func nodeName(i int) string {
	if i == 0 {
		return "real-node"
	}
	return "real-node" + strconv.Itoa(i+1)
}

func newNode(c *Cluster, i int) Node {
	name := nodeName(i)
	return Node{
		c:       c,
		Index:   i,
		Name:    name,
		IP:      networkPrefix + strconv.Itoa(nodeIPBase+i),
		PodCIDR: podCIDRPrefix + strconv.Itoa(i) + ".0/24",
		NetNS:   fmt.Sprintf("tsnode-%s-%d", c.stackID(), i),
		Cgroup:  fmt.Sprintf("tensorstack-node-%s-%d", c.stackID(), i),
		Dir:     nodeDir(c.Paths.Dir, name),
		Zone:    "zone-" + string(rune('a'+i/2)),
		Rack:    "real-rack-" + strconv.Itoa(i),
	}
}

// nodeDir is the directory of a real node of the stack whose state is in
// stackDir (Paths.Dir).
func nodeDir(stackDir, name string) string { return filepath.Join(stackDir, "nodes", name) }

// containerdSocket is where the containerd of the node in dir listens.
func containerdSocket(dir string) string { return filepath.Join(dir, "run", "containerd.sock") }

// SignalContainer sends a signal (SIGKILL, say) to a container of a real
// node of the stack whose state is in stackDir, through that node's
// containerd and the ctr binary given: the process gets it from the kernel,
// as it would from the OOM killer. containerID is the one a pod's status
// gives, with or without its containerd:// prefix.
func SignalContainer(ctx context.Context, ctr, stackDir, node, containerID, signal string) error {
	id := strings.TrimPrefix(containerID, "containerd://")
	sock := containerdSocket(nodeDir(stackDir, node))
	out, err := exec.CommandContext(ctx, ctr, "--address", sock, "-n", "k8s.io", "task", "kill", "--signal", signal, id).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr task kill --signal %s %s on %s: %v: %s", signal, id, node, err, out)
	}
	return nil
}

// Info is what the state file records of the node.
func (n Node) Info() NodeInfo {
	return NodeInfo{Name: n.Name, IP: n.IP, PodCIDR: n.PodCIDR, NetNS: n.NetNS, Zone: n.Zone, Rack: n.Rack}
}

// componentName names a process of the node: kubelet-real-node2.
func (n Node) componentName(part string) string { return part + "-" + n.Name }

func (n Node) path(parts ...string) string {
	return filepath.Join(append([]string{n.Dir}, parts...)...)
}
func (n Node) socket() string        { return containerdSocket(n.Dir) }
func (n Node) holderPIDFile() string { return n.c.Paths.PIDFile(n.componentName("holder")) }

// RealNodesAllowed says why real nodes cannot run here, or "" when they can.
func RealNodesAllowed() string {
	if os.Geteuid() != 0 {
		return "it needs root (network and mount namespaces, cgroups)"
	}
	for _, c := range []string{"cpu", "memory", "pids", "devices", "freezer"} {
		if !fileExists("/sys/fs/cgroup/"+c) && !fileExists("/sys/fs/cgroup/cpu,cpuacct") {
			return "no cgroup v1 hierarchy for " + c + " under /sys/fs/cgroup (the kubelet runs here with cgroupfs on cgroup v1)"
		}
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "overlay") {
		return "the kernel has no overlay file system (containerd's snapshotter)"
	}
	return ""
}

// WhyNoRealNodes says why a stack started with this environment runs no real nodes, or "" when it runs them:
// LOCAL_REAL_NODE=0, or what the machine lacks (RealNodesAllowed).
func WhyNoRealNodes(getenv func(string) string) string {
	if getenv("LOCAL_REAL_NODE") == "0" {
		return "LOCAL_REAL_NODE=0 turns them off"
	}
	if why := RealNodesAllowed(); why != "" {
		return "they cannot run here: " + why
	}
	return ""
}

// SkipWithoutRealNodes is what a suite that needs real nodes does (make node, make test-install): nothing where
// they run. Where they do not, it returns the line that says the suite is skipped and why, the skip noted for
// make test; or, under CI=true or REQUIRE_REAL_NODES=1, an error naming the reason (internal/skips).
func SkipWithoutRealNodes(suite string) (string, error) {
	why := WhyNoRealNodes(os.Getenv)
	if why == "" {
		return "", nil
	}
	why = "no real nodes: " + why
	if err := skips.Suite(suite, why, skips.RequireRealNodes); err != nil {
		return "", err
	}
	return suite + ": skipped, " + why, nil
}

// DefaultRealNodes is how many real nodes the machine holds: two with 2
// CPUs and 6 GiB of memory or more (a node idles at about 250 MiB, a
// 2-rank DDP job takes about 1.5 GiB), else one.
func DefaultRealNodes() int {
	if runtime.NumCPU() >= 2 && memTotalGiB() >= 6 {
		return 2
	}
	return 1
}

func memTotalGiB() int {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.Atoi(f[1])
			return kb >> 20
		}
	}
	return 0
}

// NodeBinariesMissing lists what the real nodes need that is not built.
func (c *Cluster) NodeBinariesMissing() []string {
	var missing []string
	for _, b := range []string{"containerd", "ctr", "containerd-shim-runc-v2", "runc", "kubelet", "kube-proxy", "coredns", "nodeproxy",
		"cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap", "registry", "local-path-provisioner"} {
		if !executable(c.bin(b)) {
			missing = append(missing, b)
		}
	}
	for _, a := range []string{pauseArchive, trainingArchive} {
		if !fileExists(filepath.Join(c.Paths.Images(), a)) {
			missing = append(missing, relTo(c.Paths.Repo, filepath.Join(c.Paths.Images(), a)))
		}
	}
	return missing
}

// cmd runs a command on the host.
func (c *Cluster) cmd(ctx context.Context, path string, args ...string) error {
	_, err := c.Host.Run(ctx, Command{Path: path, Args: args})
	return err
}

// nodeNetworkStep makes the network namespace, its bridge and each node's
// namespaces and cgroups, and starts nodeproxy, before kube-apiserver: its
// egress selector sends kubelet, pod and webhook traffic through nodeproxy.
func (c *Cluster) nodeNetworkStep() *Component {
	comp := &Component{Name: "node-network", After: []string{"files"}}
	if len(c.Nodes) == 0 {
		return comp
	}
	comp.Do = func(ctx context.Context) error {
		c.Host.Logf("preparing %d real node(s): network namespace %s (bridge %s, gateway %s)", len(c.Nodes), c.networkNetNS(), bridgeName, networkGateway)
		if err := c.saveSysctls(ctx); err != nil {
			return err
		}
		net := c.networkNetNS()
		steps := [][]string{
			{"ip", "netns", "add", net},
			{"ip", "netns", "exec", net, "ip", "link", "set", "lo", "up"},
			{"ip", "netns", "exec", net, "ip", "link", "add", bridgeName, "type", "bridge"},
			{"ip", "netns", "exec", net, "ip", "addr", "add", networkGateway + networkBits, "dev", bridgeName},
			{"ip", "netns", "exec", net, "ip", "link", "set", bridgeName, "up"},
		}
		for _, n := range c.Nodes {
			steps = append(steps, n.networkCommands()...)
		}
		for _, s := range steps {
			if err := c.cmd(ctx, s[0], s[1:]...); err != nil {
				return err
			}
		}
		for _, n := range c.Nodes {
			if err := n.holderUp(ctx); err != nil {
				return err
			}
			if err := n.cgroupsUp(); err != nil {
				return err
			}
			if err := n.openStore(); err != nil {
				return err
			}
		}
		return nil
	}
	comp.Teardown = c.nodesDown
	return comp
}

// networkCommands join node n to the network: a veth pair from its
// namespace to the bridge, its address, and routes to the other nodes' pods.
func (n Node) networkCommands() [][]string {
	net, ns := n.c.networkNetNS(), n.NetNS
	peer := fmt.Sprintf("tsveth%d", n.Index)
	in := func(args ...string) []string { return append([]string{"ip", "netns", "exec", ns}, args...) }
	cmds := [][]string{
		{"ip", "netns", "add", ns},
		in("ip", "link", "set", "lo", "up"),
		in("ip", "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", net),
		in("ip", "addr", "add", n.IP+networkBits, "dev", "eth0"),
		in("ip", "link", "set", "eth0", "up"),
		{"ip", "netns", "exec", net, "ip", "link", "set", peer, "master", bridgeName},
		{"ip", "netns", "exec", net, "ip", "link", "set", peer, "up"},
		// The network reaches every node's pods (kube-apiserver's egress to
		// pods and Services goes from there).
		{"ip", "netns", "exec", net, "ip", "route", "add", n.PodCIDR, "via", n.IP},
		// ClusterIPs are translated by kube-proxy's rules; packets made in
		// the namespace need a route before the translation.
		in("ip", "route", "add", serviceCIDR, "dev", "eth0"),
		in("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1", "net.ipv4.conf.all.route_localnet=1"),
	}
	for _, other := range n.c.Nodes {
		if other.Index != n.Index {
			cmds = append(cmds, in("ip", "route", "add", other.PodCIDR, "via", other.IP))
		}
	}
	return cmds
}

// holderUp makes the node's private mount namespace, kept by a sleeping
// process, with /var/lib and /var/log overlaid and /run bound to the node's
// own: the paths containerd and the kubelet write whatever their flags say
// stay off the host, and their mounts end with the namespace.
func (n Node) holderUp(ctx context.Context) error {
	c := n.c
	if _, err := c.Host.Start(Process{
		Name: n.componentName("holder"), Path: "unshare", Args: []string{"--mount", "--propagation", "private", "--", "sleep", "infinity"},
		LogFile: c.Paths.LogFile(n.componentName("holder")), PIDFile: n.holderPIDFile(),
	}); err != nil {
		return err
	}
	for _, d := range []string{"var-lib/upper", "var-lib/work", "var-log/upper", "var-log/work"} {
		if err := c.Host.MkdirAll(n.path("overlay", d), 0o755); err != nil {
			return err
		}
	}
	if err := c.Host.MkdirAll(n.path("run"), 0o755); err != nil {
		return err
	}
	if !c.Host.DryRun() {
		// unshare has made its namespace once the process's differs from ours.
		pid := readPID(n.holderPIDFile())
		self, _ := os.Readlink("/proc/self/ns/mnt")
		for i := 0; i < 100; i++ {
			if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); ns != "" && ns != self {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	script := fmt.Sprintf(`mount -t overlay overlay -o lowerdir=/var/lib,upperdir=%[1]s/var-lib/upper,workdir=%[1]s/var-lib/work /var/lib
mount -t overlay overlay -o lowerdir=/var/log,upperdir=%[1]s/var-log/upper,workdir=%[1]s/var-log/work /var/log
mount --bind %[2]s /run
mount --make-rshared /`, n.path("overlay"), shellQuote(n.path("run")))
	return c.cmd(ctx, "nsenter", "--mount="+n.mountNS(), "--", "sh", "-ec", script)
}

// mountNS is the node's mount namespace, held by its holder process.
func (n Node) mountNS() string {
	pid := readPID(n.holderPIDFile())
	if n.c.Host.DryRun() || pid == 0 {
		return "/proc/<" + n.componentName("holder") + ">/ns/mnt"
	}
	return fmt.Sprintf("/proc/%d/ns/mnt", pid)
}

// wrap is the command line that runs a program in the node's namespaces.
func (n Node) wrap() []string {
	return []string{"nsenter", "--net=/run/netns/" + n.NetNS, "--mount=" + n.mountNS(), "--"}
}

// cgroupsUp makes the kubelet's cgroupRoot in every v1 hierarchy.
func (n Node) cgroupsUp() error {
	if n.c.Host.DryRun() {
		fmt.Fprintf(n.c.Host.(*DryRunHost).Out, "mkdir /sys/fs/cgroup/*/%s\n", n.Cgroup)
		return nil
	}
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*/cgroup.procs")
	for _, procs := range hierarchies {
		h := filepath.Dir(procs)
		if info, err := os.Lstat(h); err != nil || info.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := os.MkdirAll(filepath.Join(h, n.Cgroup), 0o755); err != nil {
			return err
		}
	}
	// cpuset takes tasks only once it has its parent's cpus and mems.
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if data, err := os.ReadFile("/sys/fs/cgroup/cpuset/" + f); err == nil {
			if err := os.WriteFile(filepath.Join("/sys/fs/cgroup/cpuset", n.Cgroup, f), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// The node's image store (containerd's root) outlives the stack: importing
// the 1.2 GB training image takes 20 s a node. Its containers do not: the
// stop removes them (cleanContainers) and marks the store clean; a store
// not marked clean (a crash) is started afresh.
func (n Node) storeDir() string  { return filepath.Join(n.c.Paths.Persist, "nodes", n.Name) }
func (n Node) storeRoot() string { return filepath.Join(n.storeDir(), "containerd-root") }
func (n Node) cleanMark() string { return filepath.Join(n.storeDir(), "clean") }
func (n Node) stampFile(archive string) string {
	return filepath.Join(n.storeDir(), "imported-"+archive)
}

// imported says whether the store holds the archive as it is now (its
// size and modification time), and the stamp that says so.
func (n Node) imported(archive string) (stamp string, kept bool) {
	if n.c.Host.DryRun() {
		return archive + " <size> <modification time>\n", false
	}
	info, err := os.Stat(archive)
	if err != nil {
		return "", false
	}
	stamp = fmt.Sprintf("%s %d %d\n", archive, info.Size(), info.ModTime().UnixNano())
	old, err := os.ReadFile(n.stampFile(filepath.Base(archive)))
	return stamp, err == nil && string(old) == stamp
}

// openStore keeps a store marked clean and starts any other afresh; the
// mark goes while the node runs.
func (n Node) openStore() error {
	h := n.c.Host
	if !fileExists(n.cleanMark()) || h.DryRun() {
		if err := h.RemoveAll(n.storeDir()); err != nil {
			return err
		}
	}
	if err := h.MkdirAll(n.storeRoot(), 0o700); err != nil {
		return err
	}
	return h.RemoveAll(n.cleanMark())
}

// cleanContainers removes every container (pods' sandboxes among them) from
// the store of a node whose containerd still runs and whose processes are
// gone, keeping the images; it marks the store clean when that worked.
func (n Node) cleanContainers() {
	c := n.c
	ctr := append(n.wrap(), c.bin("ctr"), "--address", n.socket(), "-n", "k8s.io", "containers")
	ctx := context.Background()
	// The list on stdout; containerd's warnings go to stderr.
	list, err := c.Host.Run(ctx, Command{Path: ctr[0], Args: append(ctr[1:], "ls", "-q"), Quiet: true})
	if err != nil {
		c.Host.Logf("WARNING: %s: listing its containers: %v; its image store starts afresh next time", n.Name, err)
		return
	}
	if ids := strings.Fields(string(list)); len(ids) > 0 {
		if _, err := c.Host.Run(ctx, Command{Path: ctr[0], Args: append(append(ctr[1:], "rm"), ids...), Quiet: true}); err != nil {
			c.Host.Logf("WARNING: %s: removing its containers: %v; its image store starts afresh next time", n.Name, err)
			return
		}
	}
	_ = c.Host.WriteFile(n.cleanMark(), []byte("no containers\n"), 0o644)
}

// components are the node's steps and processes: containerd, the images,
// the kubelet, kube-proxy, CoreDNS.
func (n Node) components() []*Component {
	c := n.c
	containerd := n.componentName("containerd")
	ctr := func(args ...string) []string {
		return append(append(n.wrap(), c.bin("ctr"), "--address", n.socket()), args...)
	}
	importImages := func(ctx context.Context) error {
		for _, archive := range []string{pauseArchive, trainingArchive, mpi5TrainingArchive} {
			path := filepath.Join(c.Paths.Images(), archive)
			if archive == mpi5TrainingArchive && (c.Host.DryRun() || !fileExists(path)) {
				c.Host.Logf("%s: %s is imported only when built (NODE_IMAGE_MPI5=1 make node)", n.Name, relTo(c.Paths.Repo, path))
				continue
			}
			stamp, kept := n.imported(path)
			if kept {
				c.Host.Logf("%s: %s is in its image store already", n.Name, relTo(c.Paths.Repo, path))
				continue
			}
			start := time.Now()
			cmd := ctr("-n", "k8s.io", "images", "import", "--local", path)
			if err := c.cmd(ctx, cmd[0], cmd[1:]...); err != nil {
				return err
			}
			if err := c.Host.WriteFile(n.stampFile(archive), []byte(stamp), 0o644); err != nil {
				return err
			}
			c.Host.Logf("%s: imported %s in %s", n.Name, relTo(c.Paths.Repo, path), time.Since(start).Round(100*time.Millisecond))
		}
		return nil
	}
	// The import takes seconds per node: it runs while the rest starts.
	do, done := c.background(importImages)
	images := &Component{
		Name:  n.componentName("images"),
		Do:    do,
		Ready: []Check{{What: n.Name + ": images imported", Probe: done}},
		After: []string{containerd},
	}
	return []*Component{
		{
			Name:   containerd,
			Binary: c.bin("containerd"),
			Args:   []string{"--config", n.path("config", "containerd.toml")},
			BeforeStop: func() {
				n.killCgroupTasks()
				n.cleanContainers()
			},
			Wrap: n.wrap,
			Home: n.Dir,
			Ready: []Check{{
				What: fmt.Sprintf("%s: containerd on %s", n.Name, relTo(c.Paths.Repo, n.socket())),
				Probe: func(ctx context.Context) error {
					cmd := ctr("version")
					_, err := c.Host.Run(ctx, Command{Path: cmd[0], Args: cmd[1:]})
					return err
				},
			}},
			After:       []string{"node-network"},
			Restartable: true,
		},
		images,
		{
			Name:   n.componentName("kubelet"),
			Binary: c.bin("kubelet"),
			Args: []string{
				"--config=" + n.path("config", "kubelet.yaml"),
				"--kubeconfig=" + n.path("kubelet.kubeconfig"),
				"--container-runtime-endpoint=unix://" + n.socket(),
				"--root-dir=" + n.path("kubelet"),
				"--node-ip=" + n.IP,
				"--hostname-override=" + n.Name,
				"--node-labels=" + strings.Join([]string{nodeLabel + "=real", zoneLabel + "=" + n.Zone, rackLabel + "=" + n.Rack, blockLabel + "=real-block-0"}, ","),
				"--v=1",
			},
			Wrap: n.wrap,
			Home: n.Dir,
			Ready: []Check{{
				What:  "node " + n.Name + " Ready",
				Probe: c.kube.conditionTrue("/api/v1/nodes/"+n.Name, "Ready"),
			}},
			After:       []string{n.componentName("images"), "real-node-objects", "registry"},
			Restartable: true,
		},
		{
			Name:   n.componentName("kube-proxy"),
			Binary: c.bin("kube-proxy"),
			Args:   []string{"--config=" + n.path("config", "kube-proxy.yaml"), "--v=1"},
			Wrap:   n.wrap,
			Home:   n.Dir,
			Ready: []Check{{
				What:  n.Name + ": kube-proxy healthy",
				Probe: n.probeInside("http://127.0.0.1:10256/healthz"),
			}},
			// It exits when its Node's addresses change, as they do when the
			// kubelet registers it.
			After:       []string{n.componentName("kubelet")},
			Restartable: true,
		},
		{
			Name:   n.componentName("coredns"),
			Binary: c.bin("coredns"),
			Args:   []string{"-conf", n.path("config", "Corefile")},
			Wrap:   n.wrap,
			Home:   n.Dir,
			Ready: []Check{{
				What:  n.Name + ": CoreDNS ready on " + n.IP + ":53",
				Probe: n.probeInside("http://127.0.0.1:8181/ready"),
			}},
			After:       []string{"kube-apiserver", "node-network"},
			Restartable: true,
		},
	}
}

// probeInside checks a URL on the node's loopback, through curl in its
// network namespace (a socket belongs to its thread's namespace, which Go
// does not let a goroutine keep).
func (n Node) probeInside(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := n.c.Host.Run(ctx, Command{Path: "ip", Args: []string{"netns", "exec", n.NetNS, "curl", "-fsS", "--max-time", "2", url}})
		return err
	}
}

// writePKI issues the node's credentials. The kubelet is system:node:NAME in
// system:nodes (the Node authorizer) and serves with a certificate of the
// cluster CA, which kube-apiserver checks; kube-proxy is system:kube-proxy
// and CoreDNS a user of its own (hack/local/real-node.yaml binds both).
// They reach kube-apiserver at the network's gateway.
func (n Node) writePKI(p *pki) error {
	server := "https://" + networkGateway + ":" + n.c.port(n.c.Settings.APIServerPort)
	if err := p.client(n.path("kubelet.kubeconfig"), server, n.componentName("kubelet"), []string{"system:nodes"}, "system:node:"+n.Name); err != nil {
		return err
	}
	if _, _, err := p.cert("ca", n.componentName("kubelet-serving"), nil, n.Name, serverCert, n.IP, n.Name); err != nil {
		return err
	}
	if err := p.client(n.path("kube-proxy.kubeconfig"), server, n.componentName("kube-proxy"), nil, "system:kube-proxy"); err != nil {
		return err
	}
	return p.client(n.path("coredns.kubeconfig"), server, n.componentName("coredns"), nil, "system:coredns")
}

// nodesDown stops every real node and removes what they made on the
// machine: processes, namespaces (with their mounts, links and iptables
// rules), cgroups; and puts back the sysctls the kubelet changed. It is safe
// when no node ran, and finds what a crashed stack left.
func (c *Cluster) nodesDown(ctx context.Context) error {
	if c.Host.DryRun() {
		fmt.Fprintf(c.Host.(*DryRunHost).Out, "# tear down the real nodes: stop their processes, kill what is left in their cgroups, remove the cgroups and namespaces, restore %s\n", strings.Join(nodeSysctls, " "))
		return nil
	}
	for _, n := range c.Nodes {
		for _, part := range []string{"kubelet", "kube-proxy", "coredns"} {
			c.stopProcess(&Component{Name: n.componentName(part), Binary: c.bin(part), Home: n.Dir}, nil)
		}
		n.killCgroupTasks()
		c.stopProcess(&Component{Name: n.componentName("containerd"), Binary: c.bin("containerd"), Home: n.Dir}, nil)
	}
	for _, pid := range c.nodeProcesses() {
		_ = killPID(pid)
	}
	for _, n := range c.allNodeSlots() {
		n.killCgroupTasks()
		n.removeCgroups()
	}
	var errs []string
	for _, ns := range c.stackNetNSes() {
		if out, err := execOutput("ip", "netns", "del", ns); err != nil {
			errs = append(errs, fmt.Sprintf("deleting network namespace %s: %v: %s", ns, err, out))
		}
	}
	if err := c.restoreSysctls(); err != nil {
		errs = append(errs, err.Error())
	}
	for _, n := range c.allNodeSlots() {
		_ = os.Remove(n.holderPIDFile())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// allNodeSlots are nodes 0..maxRealNodes-1 of this stack: a stack that
// crashed may have run more nodes than this one describes.
func (c *Cluster) allNodeSlots() []Node {
	var out []Node
	for i := 0; i < maxRealNodes; i++ {
		out = append(out, newNode(c, i))
	}
	return out
}
