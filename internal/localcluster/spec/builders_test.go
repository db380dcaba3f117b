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
	"reflect"
	"slices"
	"strings"
	"testing"
)

// testConfig is a stack in /LOCAL with the default settings, changed by
// edit, and realNodes real nodes.
func testConfig(t *testing.T, realNodes int, edit func(*Settings)) Config {
	return testConfigIn(t, Paths{Repo: "/REPO", Bin: "/BIN", Dir: "/LOCAL", Persist: "/LOCAL-persist"}, realNodes, edit)
}

// testConfigIn is a stack in paths with the default settings, changed by
// edit, and realNodes real nodes.
func testConfigIn(t *testing.T, paths Paths, realNodes int, edit func(*Settings)) Config {
	t.Helper()
	s, err := SettingsFromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&s)
	}
	return NewConfig(s, paths, realNodes)
}

// stepKinds names the steps' types, in order, for a compact comparison.
func stepKinds(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = strings.TrimPrefix(fmt.Sprintf("%T", s), "spec.")
	}
	return out
}

// TestBuilders: each builder turns the settings into the component they
// say, as data: its process, its steps, its checks and where it comes.
func TestBuilders(t *testing.T) {
	tests := []struct {
		name      string
		realNodes int
		edit      func(*Settings)
		build     func(Config) *Component
		// What the component must be.
		wantName    string
		wantBinary  string
		wantArgs    []string // among its arguments
		notArgs     []string // not among them
		wantPorts   []Port
		wantAfter   []string
		wantSteps   []string
		wantProbes  []Probe
		restartable bool
	}{
		{
			name: "etcd", build: Etcd, wantName: "etcd", wantBinary: "/BIN/etcd",
			wantArgs:  []string{"--data-dir=/LOCAL/etcd", "--listen-client-urls=http://127.0.0.1:23790", "--unsafe-no-fsync=true"},
			wantPorts: []Port{{"LOCAL_ETCD_PORT", 23790}, {"LOCAL_ETCD_PEER_PORT", 23791}},
			wantAfter: []string{"files"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "http://127.0.0.1:23790/health"}},
			restartable: true,
		},
		{
			name: "etcd on moved ports", build: Etcd, edit: func(s *Settings) { s.EtcdPort, s.EtcdPeerPort = 2379, 2380 },
			wantName: "etcd", wantBinary: "/BIN/etcd",
			wantArgs:  []string{"--listen-client-urls=http://127.0.0.1:2379", "--initial-cluster=local=http://127.0.0.1:2380"},
			wantPorts: []Port{{"LOCAL_ETCD_PORT", 2379}, {"LOCAL_ETCD_PEER_PORT", 2380}},
			wantAfter: []string{"files"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "http://127.0.0.1:2379/health"}},
			restartable: true,
		},
		{
			name: "kube-apiserver, kwok only", build: KubeAPIServer, edit: func(s *Settings) { s.APIServerExtraArgs = []string{"--v=2"} },
			wantName: "kube-apiserver", wantBinary: "/BIN/kube-apiserver",
			wantArgs:  []string{"--secure-port=16443", "--feature-gates=GenericWorkload=true", "--v=2"},
			notArgs:   []string{"--egress-selector-config-file=/LOCAL/config/egress-selector.yaml"},
			wantPorts: []Port{{"LOCAL_APISERVER_PORT", 16443}},
			wantAfter: []string{"etcd"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "https://127.0.0.1:16443/readyz", Admin: true}},
			restartable: true,
		},
		{
			name: "kube-apiserver with real nodes, no gang API", build: KubeAPIServer, realNodes: 1,
			edit:     func(s *Settings) { s.GangWorkload = false },
			wantName: "kube-apiserver", wantBinary: "/BIN/kube-apiserver",
			wantArgs:  []string{"--egress-selector-config-file=/LOCAL/config/egress-selector.yaml"},
			notArgs:   []string{"--feature-gates=GenericWorkload=true"},
			wantPorts: []Port{{"LOCAL_APISERVER_PORT", 16443}},
			wantAfter: []string{"etcd", "nodeproxy"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "https://127.0.0.1:16443/readyz", Admin: true}},
			restartable: true,
		},
		{
			name: "kube-scheduler", build: KubeScheduler, wantName: "kube-scheduler", wantBinary: "/BIN/kube-scheduler",
			wantArgs:  []string{"--config=/LOCAL/config/kube-scheduler.yaml", "--secure-port=16259", "--feature-gates=GenericWorkload=true"},
			wantPorts: []Port{{"LOCAL_SCHEDULER_PORT", 16259}},
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "https://127.0.0.1:16259/readyz", Insecure: true}},
			restartable: true,
		},
		{
			name: "scheduler-plugins", build: SchedulerPlugins, wantName: "scheduler-plugins", wantBinary: "/BIN/kube-scheduler-plugins",
			wantArgs:  []string{"--config=/LOCAL/config/scheduler-plugins.yaml", "--secure-port=16261"},
			notArgs:   []string{"--feature-gates=GenericWorkload=true"},
			wantPorts: []Port{{"LOCAL_SCHEDULER_PLUGINS_PORT", 16261}},
			wantAfter: []string{"kube-apiserver", "scheduler-plugins-crd"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "https://127.0.0.1:16261/readyz", Insecure: true}},
			restartable: true,
		},
		{
			name: "scheduler-plugins' CRD", build: SchedulerPluginsCRD, wantName: "scheduler-plugins-crd",
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{"Log", "Apply"},
			wantProbes: []Probe{ConditionTrue{Path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.x-k8s.io", Type: "Established"}},
		},
		{
			name: "kwok", build: Kwok, wantName: "kwok", wantBinary: "/BIN/kwok",
			wantArgs:  []string{"--node-port=16247", "--cidr=10.16.0.0/12"},
			wantPorts: []Port{{"LOCAL_KWOK_PORT", 16247}},
			wantAfter: []string{"kwok-deletes-policy"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "https://127.0.0.1:16247/healthz", CA: "/LOCAL/pki/ca.crt"}},
			restartable: true,
		},
		{
			name: "fake nodes", build: FakeNodes, edit: func(s *Settings) { s.FakeNodes = 3 }, wantName: "fake-nodes",
			wantAfter: []string{"kwok"}, wantSteps: []string{"Log", "Apply"},
			wantProbes: []Probe{NodesReady{Selector: "type=kwok", Count: 3}},
		},
		{
			name: "training-apiserver", build: TrainingAPIServer,
			edit: func(s *Settings) {
				s.TrainingAPIServerExtraArgs = []string{"--x"}
				s.TrainingAPIServerEnv = []string{"GOGC=50"}
			},
			wantName: "training-apiserver", wantBinary: "/BIN/training-apiserver",
			wantArgs:  []string{"--secure-port=18443", "--embedded-etcd-dir=/LOCAL/training-etcd", "--anonymous-auth=false", "--x"},
			wantPorts: []Port{{"LOCAL_TRAINING_PORT", 18443}},
			wantAfter: []string{"training-apiservice"}, wantSteps: []string{},
			wantProbes: []Probe{
				GetURL{URL: "https://127.0.0.1:18443/readyz", CA: "/LOCAL/pki/training-ca.crt"},
				ConditionTrue{Path: "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.batch.tensorstack.dev", Type: "Available"},
			},
			restartable: true,
		},
		{
			name: "training-controller-manager, plain metrics, no Kueue", build: TrainingControllerManager,
			edit:     func(s *Settings) { s.TrainingMetricsSecure, s.Kueue = false, false },
			wantName: "training-controller-manager", wantBinary: "/BIN/training-controller-manager",
			wantArgs:  []string{"--metrics-bind-address=127.0.0.1:18080", "--metrics-secure=false"},
			wantPorts: []Port{{"LOCAL_TRAINING_METRICS_PORT", 18080}, {"LOCAL_TRAINING_HEALTH_PORT", 18081}},
			wantAfter: []string{"training-apiserver", "scheduler-plugins-crd"}, wantSteps: []string{},
			wantProbes:  []Probe{Health{Base: "http://127.0.0.1:18081"}},
			restartable: true,
		},
		{
			name: "training-controller-manager, as installed", build: TrainingControllerManager,
			wantName: "training-controller-manager", wantBinary: "/BIN/training-controller-manager",
			notArgs:   []string{"--metrics-secure=false"},
			wantPorts: []Port{{"LOCAL_TRAINING_METRICS_PORT", 18080}, {"LOCAL_TRAINING_HEALTH_PORT", 18081}},
			wantAfter: []string{"training-apiserver", "scheduler-plugins-crd", "kueue-install"}, wantSteps: []string{},
			wantProbes:  []Probe{Health{Base: "http://127.0.0.1:18081"}},
			restartable: true,
		},
		{
			name: "the files", build: Files, wantName: "files",
			wantSteps: []string{"Log", "WritePKI", "WriteConfigs"},
		},
		{
			name: "the node network without real nodes", build: NodeNetwork, wantName: "node-network",
			wantAfter: []string{"files"}, wantSteps: []string{},
		},
		{
			name: "the node network of one node", build: NodeNetwork, realNodes: 1, wantName: "node-network",
			wantAfter: []string{"files"},
			wantSteps: append(append([]string{"Log", "SaveSysctls"}, repeat("Exec", 5+10)...), "HoldMountNamespace", "MakeCgroups", "OpenImageStore"),
		},
		{
			name: "nodeproxy", build: Nodeproxy, realNodes: 2, wantName: "nodeproxy", wantBinary: "/BIN/nodeproxy",
			wantArgs:  []string{"-egress", "/LOCAL/node-egress.sock"},
			wantAfter: []string{"node-network"}, wantSteps: []string{},
			wantProbes: []Probe{SocketExists{Path: "/LOCAL/node-egress.sock"}},
		},
		{
			name: "the registry", build: Registry, wantName: "registry", wantBinary: "/BIN/registry",
			wantArgs: []string{"serve", "/LOCAL/config/registry.yaml"}, wantPorts: []Port{{"LOCAL_REGISTRY_PORT", 15000}},
			wantAfter: []string{"files"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "http://127.0.0.1:15000/v2/"}},
			restartable: true,
		},
		{
			name: "local-path-provisioner", build: LocalPathProvisioner, wantName: "local-path-provisioner", wantBinary: "/BIN/local-path-provisioner",
			wantArgs:  []string{"--namespace=local-path-storage"},
			wantAfter: []string{"storage"}, wantSteps: []string{},
			wantProbes: []Probe{LogContains{File: "/LOCAL/logs/local-path-provisioner.log",
				Any: []string{"successfully acquired lease", "Starting provisioner controller"}}},
			restartable: true,
		},
		{
			name: "the MultiKueue worker", build: MultiKueueWorker, edit: func(s *Settings) { s.MultiKueue = true }, wantName: "multikueue-worker",
			wantAfter: []string{"kueue-queues", "training-roles"}, wantSteps: []string{"StartMultiKueueWorker"},
			wantProbes: []Probe{
				ConditionTrue{Path: "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/worker", Type: "Active"},
				ConditionTrue{Path: "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/multikueue-cluster-queue", Type: "Active"},
			},
		},
		{
			name: "kube-controller-manager", build: KubeControllerManager, wantName: "kube-controller-manager", wantBinary: "/BIN/kube-controller-manager",
			wantArgs:  []string{"--secure-port=16257", "--service-cluster-ip-range=10.0.0.0/24", "--feature-gates=GenericWorkload=true"},
			wantPorts: []Port{{"LOCAL_KCM_PORT", 16257}},
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{},
			wantProbes:  []Probe{GetURL{URL: "https://127.0.0.1:16257/healthz", Insecure: true}},
			restartable: true,
		},
		{
			name: "kwok's delete policy", build: KwokPolicy, wantName: "kwok-deletes-policy",
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{"Apply"},
		},
		{
			name: "the APIService", build: TrainingAPIRegistration, wantName: "training-apiservice",
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{"Log", "Apply"},
		},
		{
			name: "the installation's roles", build: TrainingRoles, wantName: "training-roles",
			wantAfter: []string{"training-controller-manager"}, wantSteps: []string{"Log", "Apply"},
		},
		{
			name: "the real nodes' objects", build: RealNodeObjects, realNodes: 1, wantName: "real-node-objects",
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{"ApplyTemplate"},
		},
		{
			name: "the StorageClass", build: Storage, realNodes: 1, wantName: "storage",
			wantAfter: []string{"kube-apiserver"}, wantSteps: []string{"Log", "Apply"},
		},
		{
			name: "the default service account", build: DefaultServiceAccount, wantName: "default-serviceaccount",
			wantAfter: []string{"kube-controller-manager"}, wantSteps: []string{},
			wantProbes: []Probe{ObjectExists{Path: "/api/v1/namespaces/default/serviceaccounts/default"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.build(testConfig(t, tt.realNodes, tt.edit))
			if c.Name != tt.wantName || c.Binary != tt.wantBinary || c.Restartable != tt.restartable {
				t.Errorf("name %q binary %q restartable %v, want %q %q %v", c.Name, c.Binary, c.Restartable, tt.wantName, tt.wantBinary, tt.restartable)
			}
			for _, a := range tt.wantArgs {
				if !slices.Contains(c.Args, a) {
					t.Errorf("arguments lack %q: %q", a, c.Args)
				}
			}
			for _, a := range tt.notArgs {
				if slices.Contains(c.Args, a) {
					t.Errorf("arguments hold %q: %q", a, c.Args)
				}
			}
			if !reflect.DeepEqual(c.Ports, tt.wantPorts) {
				t.Errorf("ports %v, want %v", c.Ports, tt.wantPorts)
			}
			if got := append([]string{}, c.After...); !reflect.DeepEqual(got, append([]string{}, tt.wantAfter...)) {
				t.Errorf("after %q, want %q", got, tt.wantAfter)
			}
			if got := stepKinds(c.Steps); !reflect.DeepEqual(got, append([]string{}, tt.wantSteps...)) {
				t.Errorf("steps %q, want %q", got, tt.wantSteps)
			}
			var probes []Probe
			for _, check := range c.Ready {
				if check.What == "" {
					t.Errorf("a check of %T says nothing of what it waits for", check.Probe)
				}
				probes = append(probes, check.Probe)
			}
			if !reflect.DeepEqual(probes, tt.wantProbes) {
				t.Errorf("probes %+v, want %+v", probes, tt.wantProbes)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestRealNode: a node's processes run in its namespaces, under its own
// directory, after what they need; containerd empties its store first on
// the way down, and the images import in the background.
func TestRealNode(t *testing.T) {
	c := testConfig(t, 2, nil)
	comps := RealNode(c, 1)
	var names []string
	for _, comp := range comps {
		names = append(names, comp.Name)
		if comp.IsProcess() && (comp.Namespace == nil || comp.Namespace.NetNS != c.Nodes[1].NetNS || comp.Home != c.Nodes[1].Dir) {
			t.Errorf("%s runs outside real-node2's namespaces or directory: %+v, home %s", comp.Name, comp.Namespace, comp.Home)
		}
	}
	want := []string{"containerd-real-node2", "images-real-node2", "kubelet-real-node2", "kube-proxy-real-node2", "coredns-real-node2"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("components %q, want %q", names, want)
	}
	if got := stepKinds(comps[0].BeforeStop); !reflect.DeepEqual(got, []string{"KillCgroupTasks", "CleanContainers"}) {
		t.Errorf("containerd before its stop: %q", got)
	}
	images, ok := comps[1].Steps[0].(ImportImages)
	if !ok || !images.Background || len(images.Archives) != 2 || len(images.Optional) != 1 {
		t.Errorf("images: %+v", comps[1].Steps)
	}
	if !reflect.DeepEqual(comps[1].Ready[0].Probe, StepsFinished{Component: "images-real-node2"}) {
		t.Errorf("images ready when %+v", comps[1].Ready[0].Probe)
	}
	if !slices.Contains(comps[2].Args, "--node-ip=10.200.0.11") || !slices.Contains(comps[2].Args, "--hostname-override=real-node2") {
		t.Errorf("kubelet arguments %q", comps[2].Args)
	}
}

// TestComponentsFollowTheSettings: the stack's list holds what the settings
// turn on, each after what it needs.
func TestComponentsFollowTheSettings(t *testing.T) {
	tests := []struct {
		name      string
		realNodes int
		edit      func(*Settings)
		want      []string
		absent    []string
	}{
		{
			name:   "defaults without real nodes",
			want:   []string{"files", "etcd", "kueue", "scheduler-plugins", "training-apiserver", "fake-nodes", "default-serviceaccount"},
			absent: []string{"nodeproxy", "registry", "multikueue-worker"},
		},
		{
			name: "two real nodes", realNodes: 2,
			want: []string{"nodeproxy", "registry", "kubelet-real-node", "kubelet-real-node2", "local-path-provisioner"},
		},
		{
			name: "minimal",
			edit: func(s *Settings) { s.SkipTraining, s.Kueue, s.SchedulerPlugins = true, false, false },
			want: []string{"etcd", "kube-apiserver", "kwok"},
			absent: []string{"kueue", "kueue-install", "scheduler-plugins", "scheduler-plugins-crd", "training-apiserver",
				"training-controller-manager", "multikueue-worker"},
		},
		{
			name: "MultiKueue", edit: func(s *Settings) { s.MultiKueue = true },
			want: []string{"multikueue-worker"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, err := Components(testConfig(t, tt.realNodes, tt.edit))
			if err != nil {
				t.Fatal(err)
			}
			index := map[string]int{}
			for i, comp := range all {
				index[comp.Name] = i
			}
			for _, name := range tt.want {
				if _, ok := index[name]; !ok {
					t.Errorf("%s is not in the stack", name)
				}
			}
			for _, name := range tt.absent {
				if _, ok := index[name]; ok {
					t.Errorf("%s is in the stack", name)
				}
			}
			for i, comp := range all {
				for _, a := range comp.After {
					if index[a] >= i {
						t.Errorf("%s starts before %s, which it comes after", comp.Name, a)
					}
				}
			}
		})
	}
}
