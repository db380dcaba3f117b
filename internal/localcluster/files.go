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
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// filesStep writes the PKI and every configuration file before anything
// starts.
func (c *Cluster) filesStep() *Component {
	return &Component{
		Name: "files",
		Do: func(context.Context) error {
			c.Host.Logf("generating PKI in %s and configuration in %s", relTo(c.Paths.Repo, c.Paths.PKI()), relTo(c.Paths.Repo, c.Paths.Config()))
			if err := c.writePKI(); err != nil {
				return err
			}
			return c.writeConfigs()
		},
	}
}

// writePKI issues every certificate, key and kubeconfig of the stack.
func (c *Cluster) writePKI() error {
	p := newPKI(c.Host, c.Paths.PKI())
	if err := c.Host.MkdirAll(c.Paths.PKI(), 0o700); err != nil {
		return err
	}
	server := c.server()
	steps := []func() error{
		func() error { return p.ca("ca", "local-kubernetes-ca") },
		func() error { return p.ca("front-proxy-ca", "local-front-proxy-ca") },
		func() error { return p.ca("training-ca", "local-training-apiserver-ca") },
		func() error {
			sans := []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local", serviceFirstIP}
			if len(c.Nodes) > 0 {
				// The real nodes reach it at their network's gateway.
				sans = append(sans, networkGateway)
			}
			_, _, err := p.cert("ca", "kube-apiserver", nil, "kube-apiserver", serverCert, sans...)
			return err
		},
		func() error {
			_, _, err := p.cert("front-proxy-ca", "front-proxy-client", nil, "front-proxy-client", clientCert)
			return err
		},
		// The admin's certificate; its kubeconfig is the stack's.
		func() error {
			return p.client(c.Paths.Kubeconfig(), server, "admin", []string{"system:masters"}, adminUser)
		},
		// What kube-apiserver shows kubelets (logs, exec); a real node's
		// kubelet authorizes it with a SubjectAccessReview.
		func() error {
			_, _, err := p.cert("ca", "kube-apiserver-kubelet-client", []string{"system:masters"}, "kube-apiserver-kubelet-client", clientCert)
			return err
		},
		func() error {
			return p.client(c.pki("kube-controller-manager.kubeconfig"), server, "kube-controller-manager", nil, "system:kube-controller-manager")
		},
		func() error {
			return p.client(c.pki("kube-scheduler.kubeconfig"), server, "kube-scheduler", nil, "system:kube-scheduler")
		},
		// The fake nodes' kubelet API, served by kwok on loopback; kwok's own
		// identity lets hack/local/kwok-pod-deletes.yaml single out its deletes.
		func() error {
			_, _, err := p.cert("ca", "kwok-kubelet", nil, "kwok-kubelet", serverCert, "127.0.0.1", "localhost")
			return err
		},
		func() error {
			return p.client(c.pki("kwok.kubeconfig"), server, "kwok", []string{"system:masters"}, kwokUser)
		},
		func() error {
			host := TrainingService + "." + TrainingNamespace + ".svc"
			_, _, err := p.cert("training-ca", "training-apiserver", nil, host, serverCert,
				host, host+".cluster.local", "localhost", "127.0.0.1")
			return err
		},
		func() error { return p.keypair("sa") },
	}
	if c.Settings.SchedulerPlugins {
		steps = append(steps, func() error {
			return p.client(c.pki("scheduler-plugins.kubeconfig"), server, "scheduler-plugins", nil, schedulerPluginsName)
		})
	}
	if c.Settings.Kueue {
		steps = append(steps, func() error {
			return p.client(c.pki("kueue.kubeconfig"), server, "kueue", []string{"system:masters"}, kueueUser)
		})
	}
	if len(c.Nodes) > 0 {
		steps = append(steps, func() error {
			return p.client(c.pki("local-path-provisioner.kubeconfig"), server, "local-path-provisioner", []string{"system:masters"}, storageUser)
		})
		for _, n := range c.Nodes {
			n := n
			steps = append(steps, func() error { return n.writePKI(p) })
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// fill replaces @KEY@ placeholders of a template.
func fill(template []byte, values map[string]string) []byte {
	pairs := make([]string, 0, 2*len(values))
	for _, k := range sortedKeys(values) {
		pairs = append(pairs, "@"+k+"@", values[k])
	}
	return []byte(strings.NewReplacer(pairs...).Replace(string(template)))
}

// fillFile reads a template of hack/local and fills it in.
func (c *Cluster) fillFile(name string, values map[string]string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(c.Paths.Hack(), name))
	if err != nil {
		return nil, err
	}
	return fill(data, values), nil
}

// writeConfigs writes kwok's stages, the schedulers' configurations, the fake
// nodes, the APIService, Kueue's files and the real nodes' files.
func (c *Cluster) writeConfigs() error {
	write := func(name, data string) error { return c.Host.WriteFile(c.config(name), []byte(data), 0o644) }
	stages, err := c.kwokStages()
	if err != nil {
		return err
	}
	if err := write("kwok-stages.yaml", stages); err != nil {
		return err
	}
	// In the CRI log format kwok's kubelet API parses: time, stream, tag, line.
	if err := write("replica.log", "2026-01-01T00:00:00.000000000Z stdout F fake training replica: started\n"+
		"2026-01-01T00:00:01.000000000Z stdout F fake training replica: step 1 loss 0.9\n"+
		"2026-01-01T00:00:02.000000000Z stdout F fake training replica: step 2 loss 0.5\n"); err != nil {
		return err
	}
	if err := write("kube-scheduler.yaml", c.schedulerConfig("kube-scheduler", "")); err != nil {
		return err
	}
	if c.Settings.SchedulerPlugins {
		// One profile under its own name, so it never takes kube-scheduler's
		// pods; coscheduling as in the module's manifests (it also sorts the
		// queue, keeping a group's pods together).
		if err := write("scheduler-plugins.yaml", c.schedulerConfig("scheduler-plugins", `profiles:
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
`)); err != nil {
			return err
		}
	}
	if err := write("fake-nodes.yaml", c.fakeNodesYAML()); err != nil {
		return err
	}
	if c.Settings.Kueue {
		if err := c.kueueFiles(); err != nil {
			return err
		}
	}
	if c.Settings.Training() {
		ca, err := c.readOrPlaceholder(c.pki("training-ca.crt"))
		if err != nil {
			return err
		}
		apiservice, err := c.fillFile("training-apiservice.yaml", map[string]string{
			"TRAINING_PORT": c.port(c.Settings.TrainingPort),
			"CA_BUNDLE":     base64.StdEncoding.EncodeToString(ca),
		})
		if err != nil {
			return err
		}
		if err := write("training-apiservice.yaml", string(apiservice)); err != nil {
			return err
		}
	}
	if len(c.Nodes) > 0 {
		if err := c.writeNodeFiles(); err != nil {
			return err
		}
	}
	return nil
}

// readOrPlaceholder reads a file the PKI wrote; a dry run wrote none, and
// gets a stand-in.
func (c *Cluster) readOrPlaceholder(path string) ([]byte, error) {
	if c.Host.DryRun() {
		return []byte("<" + filepath.Base(path) + ">"), nil
	}
	return os.ReadFile(path)
}

func (c *Cluster) schedulerConfig(name, extra string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
%s`, c.pki(name+".kubeconfig"), extra)
}

// kwokStages are kwok's stock stages, minus pod-complete (it would complete
// the pods our exit-code stage controls), ours, and the logs every fake
// container shows, so kubectl logs has something to print.
func (c *Cluster) kwokStages() (string, error) {
	dir := filepath.Join(c.Paths.Modules.Kwok, "kustomize", "stage")
	var b bytes.Buffer
	for _, f := range []string{"node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-ready.yaml", "pod/fast/pod-delete.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("kwok's stage file: %w (run make test-binaries)", err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	ours, err := filepath.Glob(filepath.Join(c.Paths.Hack(), "kwok-stages", "*.yaml"))
	if err != nil {
		return "", err
	}
	for _, f := range ours {
		data, err := os.ReadFile(f)
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
`, c.config("replica.log"))
	return b.String(), nil
}

// fakeNodesYAML describes the kwok nodes; every two share a rack and every
// four a block, for the topology tests.
func (c *Cluster) fakeNodesYAML() string {
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
