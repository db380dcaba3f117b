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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Names and addresses of the stack that no setting changes.
const (
	serviceCIDR    = "10.0.0.0/24"
	serviceFirstIP = "10.0.0.1"
	// Fake addresses kwok reports for pods: nothing listens on them. The
	// fake nodes report loopback, where kwok serves the kubelet API (logs).
	kwokPodCIDR = "10.16.0.0/12"
	kwokNodeIP  = "127.0.0.1"
	kwokUser    = "local-kwok"

	TrainingNamespace  = "tensorstack-system"
	TrainingService    = "training-apiserver"
	TrainingAPIService = "v1beta1.batch.tensorstack.dev"

	// The second scheduler's pods name it in spec.schedulerName.
	schedulerPluginsName = "scheduler-plugins-scheduler"
	schedulerPluginsCRD  = "podgroups.scheduling.x-k8s.io"

	adminUser = "local-admin"
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
	// BridgeName is the network's bridge; VethPrefix starts the name of
	// each node's veth peer on it.
	BridgeName = "tsbr0"
	VethPrefix = "tsveth"
	// MaxRealNodes is the most real nodes a stack runs.
	MaxRealNodes = 8

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
	PauseArchive    = "pause.tar"
	TrainingArchive = "training.tar"
	// Open MPI 5's training image, for the tests that run an MPIJob with it:
	// built by the test builds only, so a node imports it when it is there.
	mpi5TrainingArchive = "training-mpi5.tar"

	storageNamespace = "local-path-storage"
	storageClass     = "local-path"
	storageUser      = "system:local-path-provisioner"
)

// NodeSysctls are machine-wide sysctls the kubelet sets at every start; they
// are saved before the first node starts and put back after the last stops.
var NodeSysctls = []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops"}

// Config is what every builder reads: the settings, the paths, and the real
// nodes the stack runs.
type Config struct {
	Settings Settings
	Paths    Paths
	// Nodes are the real nodes this stack runs (none: kwok only).
	Nodes []Node
}

// NewConfig describes a stack; realNodes is how many real nodes it runs.
func NewConfig(s Settings, p Paths, realNodes int) Config {
	c := Config{Settings: s, Paths: p}
	for i := 0; i < realNodes; i++ {
		c.Nodes = append(c.Nodes, c.NodeAt(i))
	}
	return c
}

// Server is kube-apiserver's address on loopback.
func (c Config) Server() string {
	return "https://127.0.0.1:" + strconv.Itoa(c.Settings.APIServerPort)
}

// Bin is the path of a binary the stack runs.
func (c Config) Bin(name string) string { return filepath.Join(c.Paths.Bin, name) }

// PKI is the path of a file of the stack's PKI.
func (c Config) PKI(name string) string { return filepath.Join(c.Paths.PKI(), name) }

// ConfigFile is the path of one of the stack's configuration files.
func (c Config) ConfigFile(name string) string { return filepath.Join(c.Paths.Config(), name) }

// dir is a directory in the stack's state.
func (c Config) dir(name string) string { return c.Paths.Dir + "/" + name }

func port(p int) string { return strconv.Itoa(p) }

// StackID tells this stack's namespaces and cgroups from another's (the
// MultiKueue worker beside it).
func (c Config) StackID() string {
	sum := sha256.Sum256([]byte(c.Paths.Dir))
	return hex.EncodeToString(sum[:])[:8]
}

// NetworkNetNS is the real nodes' network namespace.
func (c Config) NetworkNetNS() string { return "tsnet-" + c.StackID() }

// NodeNetNSPrefix starts the name of every node's network namespace.
func (c Config) NodeNetNSPrefix() string { return "tsnode-" + c.StackID() + "-" }

// Node is one real node: containerd and runc run its containers, a kubelet
// registers it, kube-proxy serves ClusterIP Services and CoreDNS answers
// cluster.local, all in network and mount namespaces of its own.
type Node struct {
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
	// HolderPIDFile records the process that holds its mount namespace;
	// StoreDir is where its image store outlives the stack.
	HolderPIDFile string
	StoreDir      string
}

// NodeName follows kind's workers: real-node, real-node2, real-node3.
func NodeName(i int) string {
	if i == 0 {
		return "real-node"
	}
	return "real-node" + strconv.Itoa(i+1)
}

// NodeDir is the directory of a real node of the stack whose state is in
// stackDir (Paths.Dir).
func NodeDir(stackDir, name string) string { return filepath.Join(stackDir, "nodes", name) }

// ContainerdSocket is the socket of the containerd of a node in dir.
func ContainerdSocket(dir string) string { return filepath.Join(dir, "run", "containerd.sock") }

// NodeAt is node i of this stack, whether or not the stack runs it (a
// crashed stack may have run more).
func (c Config) NodeAt(i int) Node {
	name := NodeName(i)
	n := Node{
		Index:    i,
		Name:     name,
		IP:       networkPrefix + strconv.Itoa(nodeIPBase+i),
		PodCIDR:  podCIDRPrefix + strconv.Itoa(i) + ".0/24",
		NetNS:    c.NodeNetNSPrefix() + strconv.Itoa(i),
		Cgroup:   fmt.Sprintf("tensorstack-node-%s-%d", c.StackID(), i),
		Dir:      NodeDir(c.Paths.Dir, name),
		Zone:     "zone-" + string(rune('a'+i/2)),
		Rack:     "real-rack-" + strconv.Itoa(i),
		StoreDir: filepath.Join(c.Paths.Persist, "nodes", name),
	}
	n.HolderPIDFile = c.Paths.PIDFile(n.ComponentName("holder"))
	return n
}

// AllNodeSlots are nodes 0..MaxRealNodes-1 of this stack.
func (c Config) AllNodeSlots() []Node {
	out := make([]Node, 0, MaxRealNodes)
	for i := 0; i < MaxRealNodes; i++ {
		out = append(out, c.NodeAt(i))
	}
	return out
}

// ComponentName is the name of one of the node's parts (containerd,
// kubelet ...) among the stack's components.
func (n Node) ComponentName(part string) string { return part + "-" + n.Name }

// Path is a path under the node's directory.
func (n Node) Path(parts ...string) string {
	return filepath.Join(append([]string{n.Dir}, parts...)...)
}

// Socket is the node's containerd socket.
func (n Node) Socket() string { return ContainerdSocket(n.Dir) }

// The node's image store (containerd's root) outlives the stack: importing
// the 1.2 GB training image takes 20 s a node. Its containers do not: the
// stop removes them and marks the store clean; a store not marked clean (a
// crash) is started afresh.
func (n Node) StoreRoot() string { return filepath.Join(n.StoreDir, "containerd-root") }

// CleanMark is the file that marks the image store clean.
func (n Node) CleanMark() string { return filepath.Join(n.StoreDir, "clean") }

// StampFile records what of an archive the store holds.
func (n Node) StampFile(archive string) string {
	return filepath.Join(n.StoreDir, "imported-"+archive)
}

// Namespace is the node's pair of namespaces, for its processes.
func (n Node) Namespace() *Namespace {
	return &Namespace{NetNS: n.NetNS, Holder: n.ComponentName("holder"), HolderPIDFile: n.HolderPIDFile}
}

// labels are the node's labels, as the kubelet registers them.
func (n Node) labels() string {
	return strings.Join([]string{nodeLabel + "=real", zoneLabel + "=" + n.Zone, rackLabel + "=" + n.Rack, blockLabel + "=real-block-0"}, ",")
}
