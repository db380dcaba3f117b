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
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Files writes the PKI and every configuration file before anything
// starts.
func Files(c Config) *Component {
	return &Component{
		Name: "files",
		Steps: []Step{
			Log{fmt.Sprintf("generating PKI in %s and configuration in %s", RelTo(c.Paths.Repo, c.Paths.PKI()), RelTo(c.Paths.Repo, c.Paths.Config()))},
			WritePKI{Dir: c.Paths.PKI(), Items: c.pkiItems()},
			WriteConfigs{Dir: c.Paths.Config()},
		},
	}
}

// pkiItems are every certificate, key and kubeconfig of the stack.
func (c Config) pkiItems() []PKIItem {
	server := c.Server()
	apiserverSANs := []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", serviceFirstIP}
	if len(c.Nodes) > 0 {
		// The real nodes reach it at their network's gateway.
		apiserverSANs = append(apiserverSANs, networkGateway)
	}
	training := TrainingService + "." + TrainingNamespace + ".svc"
	items := []PKIItem{
		CA{"ca", "local-kubernetes-ca"},
		CA{"front-proxy-ca", "local-front-proxy-ca"},
		CA{"training-ca", "local-training-apiserver-ca"},
		Cert{CA: "ca", Name: "kube-apiserver", CommonName: "kube-apiserver", Server: true, SANs: apiserverSANs},
		Cert{CA: "front-proxy-ca", Name: "front-proxy-client", CommonName: "front-proxy-client"},
		// The admin's certificate; its kubeconfig is the stack's.
		Kubeconfig{File: c.Paths.Kubeconfig(), Server: server, Name: "admin", Orgs: []string{"system:masters"}, User: adminUser},
		// What kube-apiserver shows kubelets (logs, exec); a real node's
		// kubelet authorizes it with a SubjectAccessReview.
		Cert{CA: "ca", Name: "kube-apiserver-kubelet-client", Orgs: []string{"system:masters"}, CommonName: "kube-apiserver-kubelet-client"},
		Kubeconfig{File: c.PKI("kube-controller-manager.kubeconfig"), Server: server, Name: "kube-controller-manager", User: "system:kube-controller-manager"},
		Kubeconfig{File: c.PKI("kube-scheduler.kubeconfig"), Server: server, Name: "kube-scheduler", User: "system:kube-scheduler"},
		// The fake nodes' kubelet API, served by kwok on loopback; kwok's own
		// identity lets hack/local/kwok-pod-deletes.yaml single out its deletes.
		Cert{CA: "ca", Name: "kwok-kubelet", CommonName: "kwok-kubelet", Server: true, SANs: []string{"127.0.0.1", "localhost"}},
		Kubeconfig{File: c.PKI("kwok.kubeconfig"), Server: server, Name: "kwok", Orgs: []string{"system:masters"}, User: kwokUser},
		Cert{CA: "training-ca", Name: "training-apiserver", CommonName: training, Server: true,
			SANs: []string{training, training + ".cluster.local", "localhost", "127.0.0.1"}},
		KeyPair{"sa"},
	}
	if c.Settings.SchedulerPlugins {
		items = append(items, Kubeconfig{File: c.PKI("scheduler-plugins.kubeconfig"), Server: server, Name: "scheduler-plugins", User: schedulerPluginsName})
	}
	if c.Settings.Kueue {
		items = append(items, Kubeconfig{File: c.PKI("kueue.kubeconfig"), Server: server, Name: "kueue", Orgs: []string{"system:masters"}, User: kueueUser})
	}
	if len(c.Nodes) > 0 {
		items = append(items, Kubeconfig{File: c.PKI("local-path-provisioner.kubeconfig"), Server: server, Name: "local-path-provisioner",
			Orgs: []string{"system:masters"}, User: storageUser})
		for _, n := range c.Nodes {
			items = append(items, c.nodePKI(n)...)
		}
	}
	return items
}

// Fill replaces @KEY@ placeholders of a template.
func Fill(template []byte, values map[string]string) []byte {
	pairs := make([]string, 0, 2*len(values))
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pairs = append(pairs, "@"+k+"@", values[k])
	}
	return []byte(strings.NewReplacer(pairs...).Replace(string(template)))
}

// fillFile reads a template of hack/local and fills it in.
func (c Config) fillFile(src Source, name string, values map[string]string) ([]byte, error) {
	data, err := src.ReadFile(filepath.Join(c.Paths.Hack(), name))
	if err != nil {
		return nil, err
	}
	return Fill(data, values), nil
}

// ConfigFiles are kwok's stages, the schedulers' configurations, the fake
// nodes, the APIService, Kueue's files and the real nodes' files and
// directories, in the order they are written.
func ConfigFiles(c Config, src Source) ([]File, error) {
	var files []File
	add := func(name, data string) { files = append(files, c.configFile(name, []byte(data))) }
	stages, err := c.kwokStages(src)
	if err != nil {
		return nil, err
	}
	add("kwok-stages.yaml", stages)
	// In the CRI log format kwok's kubelet API parses: time, stream, tag, line.
	add("replica.log", "2026-01-01T00:00:00.000000000Z stdout F fake training replica: started\n"+
		"2026-01-01T00:00:01.000000000Z stdout F fake training replica: step 1 loss 0.9\n"+
		"2026-01-01T00:00:02.000000000Z stdout F fake training replica: step 2 loss 0.5\n")
	add("kube-scheduler.yaml", c.schedulerConfig("kube-scheduler", ""))
	if c.Settings.SchedulerPlugins {
		// One profile under its own name, so it never takes kube-scheduler's
		// pods; coscheduling as in the module's manifests (it also sorts the
		// queue, keeping a group's pods together).
		add("scheduler-plugins.yaml", c.schedulerConfig("scheduler-plugins", `profiles:
- schedulerName: `+schedulerPluginsName+`
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
`))
	}
	add("fake-nodes.yaml", c.fakeNodesYAML())
	if c.Settings.Kueue {
		kueue, err := c.kueueFiles(src)
		if err != nil {
			return nil, err
		}
		files = append(files, kueue...)
	}
	if c.Settings.Training() {
		ca, err := src.ReadFile(c.PKI("training-ca.crt"))
		if err != nil {
			return nil, err
		}
		apiservice, err := c.fillFile(src, "training-apiservice.yaml", map[string]string{
			"TRAINING_PORT": port(c.Settings.TrainingPort),
			"CA_BUNDLE":     base64.StdEncoding.EncodeToString(ca),
		})
		if err != nil {
			return nil, err
		}
		add("training-apiservice.yaml", string(apiservice))
	}
	if len(c.Nodes) > 0 {
		nodes, err := c.nodeFiles(src)
		if err != nil {
			return nil, err
		}
		files = append(files, nodes...)
	}
	return files, nil
}

func (c Config) schedulerConfig(name, extra string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
%s`, c.PKI(name+".kubeconfig"), extra)
}

// kwokStages are kwok's stock stages, minus pod-complete (it would complete
// the pods our exit-code stage controls), ours, and the logs every fake
// container shows, so kubectl logs has something to print.
func (c Config) kwokStages(src Source) (string, error) {
	dir := filepath.Join(c.Paths.Modules.Kwok, "kustomize", "stage")
	var b bytes.Buffer
	for _, f := range []string{"node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-ready.yaml", "pod/fast/pod-delete.yaml"} {
		data, err := src.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("kwok's stage file: %w (run make test-binaries)", err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	ours, err := src.Glob(filepath.Join(c.Paths.Hack(), "kwok-stages", "*.yaml"))
	if err != nil {
		return "", err
	}
	for _, f := range ours {
		data, err := src.ReadFile(f)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	fmt.Fprintf(&b, `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: replica-logs
spec:
  logs:
  - logsFile: %s
    follow: true
`, c.ConfigFile("replica.log"))
	return b.String(), nil
}

// fakeNodesYAML describes the kwok nodes; every two share a rack and every
// four a block, for the topology tests.
func (c Config) fakeNodesYAML() string {
	s := &c.Settings
	var b strings.Builder
	for i := 0; i < s.FakeNodes; i++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-%[1]d
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-%[1]d
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.present: "true"
    topology.tensorstack.dev/block: block-%[2]d
    topology.tensorstack.dev/rack: rack-%[3]d
status:
  capacity:
    cpu: "%[4]s"
    memory: "%[5]s"
    pods: "%[6]d"
    nvidia.com/gpu: "%[7]d"
  allocatable:
    cpu: "%[4]s"
    memory: "%[5]s"
    pods: "%[6]d"
    nvidia.com/gpu: "%[7]d"
`, i, i/4, i/2, s.NodeCPU, s.NodeMemory, s.NodePods, s.NodeGPUs)
	}
	return b.String()
}
