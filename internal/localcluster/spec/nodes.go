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
	"strings"
)

// registry0 is the stack's image registry, as image references name it.
func (c Config) registry0() string { return "127.0.0.1:" + port(c.Settings.RegistryPort) }

func (c Config) egressSocket() string { return filepath.Join(c.Paths.Dir, "node-egress.sock") }

func (c Config) volumesDir() string { return filepath.Join(c.Paths.Dir, "volumes") }

// NodeNetwork makes the network namespace, its bridge and each node's
// namespaces and cgroups before kube-apiserver starts: its egress selector
// sends kubelet, pod and webhook traffic through nodeproxy, which needs
// them. Without real nodes it does nothing.
func NodeNetwork(c Config) *Component {
	comp := &Component{Name: "node-network", After: []string{"files"}}
	if len(c.Nodes) == 0 {
		return comp
	}
	net := c.NetworkNetNS()
	comp.Steps = []Step{
		Log{fmt.Sprintf("preparing %d real node(s): network namespace %s (bridge %s, gateway %s)", len(c.Nodes), net, BridgeName, networkGateway)},
		SaveSysctls{Names: NodeSysctls},
	}
	commands := [][]string{
		{"ip", "netns", "add", net},
		{"ip", "netns", "exec", net, "ip", "link", "set", "lo", "up"},
		{"ip", "netns", "exec", net, "ip", "link", "add", BridgeName, "type", "bridge"},
		{"ip", "netns", "exec", net, "ip", "addr", "add", networkGateway + networkBits, "dev", BridgeName},
		{"ip", "netns", "exec", net, "ip", "link", "set", BridgeName, "up"},
	}
	for _, n := range c.Nodes {
		commands = append(commands, c.nodeNetworkCommands(n)...)
	}
	for _, cmd := range commands {
		comp.Steps = append(comp.Steps, Exec{Command: cmd})
	}
	for _, n := range c.Nodes {
		comp.Steps = append(comp.Steps, HoldMountNamespace{Node: n}, MakeCgroups{Cgroup: n.Cgroup}, OpenImageStore{Node: n})
	}
	comp.Teardown = []Step{TeardownNodes{Sysctls: NodeSysctls}}
	return comp
}

// nodeNetworkCommands join node n to the network: a veth pair from its
// namespace to the bridge, its address, and routes to the other nodes' pods.
func (c Config) nodeNetworkCommands(n Node) [][]string {
	net, ns := c.NetworkNetNS(), n.NetNS
	peer := fmt.Sprintf("%s%d", VethPrefix, n.Index)
	in := func(args ...string) []string { return append([]string{"ip", "netns", "exec", ns}, args...) }
	cmds := [][]string{
		{"ip", "netns", "add", ns},
		in("ip", "link", "set", "lo", "up"),
		in("ip", "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", net),
		in("ip", "addr", "add", n.IP+networkBits, "dev", "eth0"),
		in("ip", "link", "set", "eth0", "up"),
		{"ip", "netns", "exec", net, "ip", "link", "set", peer, "master", BridgeName},
		{"ip", "netns", "exec", net, "ip", "link", "set", peer, "up"},
		// The network reaches every node's pods (kube-apiserver's egress to
		// pods and Services goes from there).
		{"ip", "netns", "exec", net, "ip", "route", "add", n.PodCIDR, "via", n.IP},
		// ClusterIPs are translated by kube-proxy's rules; packets made in
		// the namespace need a route before the translation.
		in("ip", "route", "add", serviceCIDR, "dev", "eth0"),
		in("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1", "net.ipv4.conf.all.route_localnet=1"),
	}
	for _, other := range c.Nodes {
		if other.Index != n.Index {
			cmds = append(cmds, in("ip", "route", "add", other.PodCIDR, "via", other.IP))
		}
	}
	return cmds
}

// Nodeproxy joins the network namespace to the host: the gateway's
// kube-apiserver and registry ports lead to them on 127.0.0.1, and
// kube-apiserver reaches kubelets, pods and Services through its HTTP
// CONNECT socket, which dials from the first node's namespace: there
// kube-proxy's rules turn a ClusterIP (an aggregated API's Service) into a
// pod's address, and every node and pod is routed.
func Nodeproxy(c Config) *Component {
	apiserver := port(c.Settings.APIServerPort)
	return &Component{
		Name:   "nodeproxy",
		Binary: c.Bin("nodeproxy"),
		Args: []string{
			"-netns", "/run/netns/" + c.NetworkNetNS(),
			"-forward", networkGateway + ":" + apiserver + "=127.0.0.1:" + apiserver,
			"-forward", networkGateway + ":" + port(c.Settings.RegistryPort) + "=" + c.registry0(),
			"-egress", c.egressSocket(),
			"-egress-netns", "/run/netns/" + c.Nodes[0].NetNS,
		},
		Ready: []Check{{
			What:  "nodeproxy on " + RelTo(c.Paths.Repo, c.egressSocket()),
			Probe: SocketExists{Path: c.egressSocket()},
		}},
		After: []string{"node-network"},
	}
}

// RealNodeObjects are what the real nodes need in the cluster
// (hack/local/real-node.yaml): the admission policy that sends the stack's
// own images to them, CoreDNS' role, the kubernetes Service's endpoint.
func RealNodeObjects(c Config) *Component {
	return &Component{
		Name: "real-node-objects",
		Steps: []Step{ApplyTemplate{Template: "real-node.yaml", Values: map[string]string{
			"GATEWAY_IP":           networkGateway,
			"APISERVER_PORT":       port(c.Settings.APIServerPort),
			"IMAGE_PREFIX":         realNodeImagePrefix,
			"REGISTRY_PREFIX":      c.registry0() + "/",
			"NODE_TAINT":           nodeTaint,
			"NODE_LABEL_KEY":       nodeLabel,
			"NODE_LABEL_KEY_PATCH": strings.ReplaceAll(nodeLabel, "/", "~1"),
		}}},
		After: []string{"kube-apiserver"},
	}
}

// Registry is CNCF Distribution on 127.0.0.1, storing under the stack's
// directory; the nodes pull from it over plain HTTP through nodeproxy.
func Registry(c Config) *Component {
	return &Component{
		Name:   "registry",
		Binary: c.Bin("registry"),
		Args:   []string{"serve", c.ConfigFile("registry.yaml")},
		Ports:  []Port{{"LOCAL_REGISTRY_PORT", c.Settings.RegistryPort}},
		Ready: []Check{{
			What:  "the image registry on " + c.registry0(),
			Probe: GetURL{URL: "http://" + c.registry0() + "/v2/"},
		}},
		After:       []string{"files"},
		Restartable: true,
	}
}

// Storage creates the default StorageClass, served by local-path-provisioner
// on the host, which keeps volumes in directories the nodes share.
func Storage(c Config) *Component {
	return &Component{
		Name: "storage",
		Steps: []Step{
			Log{fmt.Sprintf("creating StorageClass %s (the default; local-path-provisioner, volumes in %s)", storageClass, RelTo(c.Paths.Repo, c.volumesDir()))},
			Apply{Files: []string{c.ConfigFile("local-path-storage.yaml")}},
		},
		After: []string{"kube-apiserver"},
	}
}

// LocalPathProvisioner serves the default StorageClass from the host.
func LocalPathProvisioner(c Config) *Component {
	return &Component{
		Name:   "local-path-provisioner",
		Binary: c.Bin("local-path-provisioner"),
		Args: []string{
			"start",
			"--config=" + c.ConfigFile("local-path-provisioner.json"),
			"--kubeconfig=" + c.PKI("local-path-provisioner.kubeconfig"),
			"--namespace=" + storageNamespace,
			"--helper-image=" + trainingImage,
		},
		Ready: []Check{{
			What:  "local-path-provisioner watching claims",
			Probe: LogContains{File: c.Paths.LogFile("local-path-provisioner"), Any: []string{"successfully acquired lease", "Starting provisioner controller"}},
		}},
		After:       []string{"storage"},
		Restartable: true,
	}
}

// RealNode is node i's steps and processes: containerd, the images, the
// kubelet, kube-proxy, CoreDNS.
func RealNode(c Config, i int) []*Component {
	n := c.Nodes[i]
	containerd := n.ComponentName("containerd")
	ns := n.Namespace()
	images := []string{filepath.Join(c.Paths.Images(), PauseArchive), filepath.Join(c.Paths.Images(), TrainingArchive)}
	return []*Component{
		{
			Name:       containerd,
			Binary:     c.Bin("containerd"),
			Args:       []string{"--config", n.Path("config", "containerd.toml")},
			BeforeStop: []Step{KillCgroupTasks{Cgroup: n.Cgroup}, CleanContainers{Node: n}},
			Namespace:  ns,
			Home:       n.Dir,
			Ready: []Check{{
				What:  fmt.Sprintf("%s: containerd on %s", n.Name, RelTo(c.Paths.Repo, n.Socket())),
				Probe: ExecSucceeds{Command: []string{c.Bin("ctr"), "--address", n.Socket(), "version"}, Namespace: ns},
			}},
			After:       []string{"node-network"},
			Restartable: true,
		},
		{
			Name: n.ComponentName("images"),
			// The import takes seconds per node: it runs while the rest starts.
			Steps: []Step{ImportImages{Node: n, Archives: images, Optional: []string{filepath.Join(c.Paths.Images(), mpi5TrainingArchive)}, Background: true}},
			Ready: []Check{{What: n.Name + ": images imported", Probe: StepsFinished{Component: n.ComponentName("images")}}},
			After: []string{containerd},
		},
		{
			Name:   n.ComponentName("kubelet"),
			Binary: c.Bin("kubelet"),
			Args: []string{
				"--config=" + n.Path("config", "kubelet.yaml"),
				"--kubeconfig=" + n.Path("kubelet.kubeconfig"),
				"--container-runtime-endpoint=unix://" + n.Socket(),
				"--root-dir=" + n.Path("kubelet"),
				"--node-ip=" + n.IP,
				"--hostname-override=" + n.Name,
				"--node-labels=" + n.labels(),
				"--v=1",
			},
			Namespace: ns,
			Home:      n.Dir,
			Ready: []Check{{
				What:  "node " + n.Name + " Ready",
				Probe: ConditionTrue{Path: "/api/v1/nodes/" + n.Name, Type: "Ready"},
			}},
			After:       []string{n.ComponentName("images"), "real-node-objects", "registry"},
			Restartable: true,
		},
		{
			Name:      n.ComponentName("kube-proxy"),
			Binary:    c.Bin("kube-proxy"),
			Args:      []string{"--config=" + n.Path("config", "kube-proxy.yaml"), "--v=1"},
			Namespace: ns,
			Home:      n.Dir,
			Ready: []Check{{
				What:  n.Name + ": kube-proxy healthy",
				Probe: GetInNode{NetNS: n.NetNS, URL: "http://127.0.0.1:10256/healthz"},
			}},
			// It exits when its Node's addresses change, as they do when the
			// kubelet registers it.
			After:       []string{n.ComponentName("kubelet")},
			Restartable: true,
		},
		{
			Name:      n.ComponentName("coredns"),
			Binary:    c.Bin("coredns"),
			Args:      []string{"-conf", n.Path("config", "Corefile")},
			Namespace: ns,
			Home:      n.Dir,
			Ready: []Check{{
				What:  n.Name + ": CoreDNS ready on " + n.IP + ":53",
				Probe: GetInNode{NetNS: n.NetNS, URL: "http://127.0.0.1:8181/ready"},
			}},
			After:       []string{"kube-apiserver", "node-network"},
			Restartable: true,
		},
	}
}

// nodePKI is the node's credentials. The kubelet is system:node:NAME in
// system:nodes (the Node authorizer) and serves with a certificate of the
// cluster CA, which kube-apiserver checks; kube-proxy is system:kube-proxy
// and CoreDNS a user of its own (hack/local/real-node.yaml binds both).
// They reach kube-apiserver at the network's gateway.
func (c Config) nodePKI(n Node) []PKIItem {
	server := "https://" + networkGateway + ":" + port(c.Settings.APIServerPort)
	return []PKIItem{
		Kubeconfig{File: n.Path("kubelet.kubeconfig"), Server: server, Name: n.ComponentName("kubelet"), Orgs: []string{"system:nodes"}, User: "system:node:" + n.Name},
		Cert{CA: "ca", Name: n.ComponentName("kubelet-serving"), CommonName: n.Name, Server: true, SANs: []string{n.IP, n.Name}},
		Kubeconfig{File: n.Path("kube-proxy.kubeconfig"), Server: server, Name: n.ComponentName("kube-proxy"), User: "system:kube-proxy"},
		Kubeconfig{File: n.Path("coredns.kubeconfig"), Server: server, Name: n.ComponentName("coredns"), User: "system:coredns"},
	}
}
