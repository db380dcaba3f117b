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

package controller

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func podByName(t *testing.T, pods []*corev1.Pod, name string) *corev1.Pod {
	t.Helper()
	for _, p := range pods {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("pod %s was not created; created: %v", name, names(pods))
	return nil
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func envOf(c *corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		if _, dup := m[e.Name]; dup {
			m[e.Name] = "<duplicate>"
			continue
		}
		m[e.Name] = e.Value
	}
	return m
}

// containerEnv is a container's environment as the kubelet gives it: a
// variable from a config map read from the config maps the controller
// wrote (the job's cluster config map), and $(NAME) references to the
// variables before it expanded. A reference to a missing config map or key
// fails the test, as it fails the container's start.
func (f *fixture) containerEnv(c *corev1.Container) map[string]string {
	f.t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := f.kubeClient.CoreV1().ConfigMaps("ns").Get(f.ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				f.t.Fatalf("container %s: %s: %v", c.Name, e.Name, err)
			}
			value, ok := cm.Data[ref.Key]
			if !ok {
				f.t.Fatalf("container %s: %s: config map %s has no key %s", c.Name, e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = value
		case e.ValueFrom == nil:
			env[e.Name] = envReference.ReplaceAllStringFunc(e.Value, func(ref string) string {
				if v, ok := env[ref[2:len(ref)-1]]; ok {
					return v
				}
				return ref
			})
		}
	}
	return env
}

// envReference is $(NAME) in a variable's value.
var envReference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// tfConfig is the TF_CONFIG document as TensorFlow reads it.
type tfConfig struct {
	Cluster map[string][]string `json:"cluster"`
	Task    struct {
		Type  string `json:"type"`
		Index int32  `json:"index"`
	} `json:"task"`
	Environment string `json:"environment"`
}

// tfConfigOf parses the TF_CONFIG of a container as it starts.
func (f *fixture) tfConfigOf(t *testing.T, c *corev1.Container) tfConfig {
	t.Helper()
	raw, ok := f.containerEnv(c)["TF_CONFIG"]
	if !ok {
		t.Fatalf("container %s has no TF_CONFIG", c.Name)
	}
	var cfg tfConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("TF_CONFIG %q is not JSON: %v", raw, err)
	}
	return cfg
}

func TestTensorFlowPods(t *testing.T) {
	job := newTFJob("mnist").
		withReplicas("chief", 1).
		withReplicas("worker", 2).
		withReplicas("ps", 1).
		withReplicas("evaluator", 1).
		withPort("worker", "tfjob-port", 3333).
		withPort("ps", "tensorflow", 4444).
		withPort("chief", "metrics", 9090). // not a TF port name: chief keeps 2222
		obj()
	f := newFixture(t, job)
	f.mustSync(job)
	pods := f.createdPods()
	if want := []string{"mnist-chief-0", "mnist-evaluator-0", "mnist-ps-0", "mnist-worker-0", "mnist-worker-1"}; !equalStrings(f.createdPodNames(), want) {
		t.Fatalf("created %v, want %v", f.createdPodNames(), want)
	}

	wantCluster := map[string][]string{
		"chief":  {"chief-0.mnist.ns.svc:2222"},
		"worker": {"worker-0.mnist.ns.svc:3333", "worker-1.mnist.ns.svc:3333"},
		"ps":     {"ps-0.mnist.ns.svc:4444"},
	}
	cases := []struct {
		pod, typ string
		index    int32
	}{
		{"mnist-chief-0", "chief", 0},
		{"mnist-worker-0", "worker", 0},
		{"mnist-worker-1", "worker", 1},
		{"mnist-ps-0", "ps", 0},
		{"mnist-evaluator-0", "evaluator", 0},
	}
	for _, tc := range cases {
		t.Run(tc.pod, func(t *testing.T) {
			p := podByName(t, pods, tc.pod)
			if p.Namespace != "ns" {
				t.Errorf("namespace %q", p.Namespace)
			}
			if want := tc.typ + "-" + itoa(tc.index); p.Spec.Hostname != want {
				t.Errorf("hostname %q, want %q", p.Spec.Hostname, want)
			}
			if p.Spec.Subdomain != "mnist" {
				t.Errorf("subdomain %q, want mnist", p.Spec.Subdomain)
			}
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy %q, want Never", p.Spec.RestartPolicy)
			}
			wantLabels := map[string]string{
				"app":                     "train",
				v1beta1.LabelJobName:      "mnist",
				v1beta1.LabelJobKind:      podbuilder.TensorFlowKind,
				v1beta1.LabelReplicaType:  tc.typ,
				v1beta1.LabelReplicaIndex: itoa(tc.index),
			}
			if !reflect.DeepEqual(p.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", p.Labels, wantLabels)
			}
			if p.Annotations[podbuilder.AnnotationRunMode] != podbuilder.RunModeImmediate {
				t.Errorf("run-mode annotation %q", p.Annotations[podbuilder.AnnotationRunMode])
			}
			wantRef := metav1.OwnerReference{
				APIVersion: "batch.tensorstack.dev/v1beta1", Kind: podbuilder.TensorFlowKind, Name: "mnist", UID: "uid-mnist",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}
			if len(p.OwnerReferences) != 1 || !reflect.DeepEqual(p.OwnerReferences[0], wantRef) {
				t.Errorf("ownerReferences %+v, want [%+v]", p.OwnerReferences, wantRef)
			}
			c := &p.Spec.Containers[0]
			if !equalStrings(c.Command, []string{"python", "train.py"}) || !equalStrings(c.Args, []string{"--epochs=3"}) {
				t.Errorf("command %v args %v changed", c.Command, c.Args)
			}
			if envOf(c)["USER_VAR"] != "kept" {
				t.Errorf("the template's own variable was lost: %v", c.Env)
			}
			cfg := f.tfConfigOf(t, c)
			if !reflect.DeepEqual(cfg.Cluster, wantCluster) {
				t.Errorf("cluster %v, want %v", cfg.Cluster, wantCluster)
			}
			if cfg.Task.Type != tc.typ || cfg.Task.Index != tc.index {
				t.Errorf("task %+v, want %s/%d", cfg.Task, tc.typ, tc.index)
			}
			if cfg.Environment != "cloud" {
				t.Errorf("environment %q", cfg.Environment)
			}
		})
	}
}

func TestTensorFlowConfigIsDeterministic(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).withReplicas("ps", 2).withReplicas("chief", 1).obj()
	cluster := func() map[string]string {
		b := &podbuilder.Builder{Adapter: podbuilder.TensorFlow, Job: job, Topology: podbuilder.NewTopology(podbuilder.TensorFlow, job, "")}
		cm, err := b.ClusterConfigMap()
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	first := cluster()
	for range 20 {
		if again := cluster(); !reflect.DeepEqual(again, first) {
			t.Fatalf("TF_CONFIG's cluster differs between calls:\n%s\n%s", first, again)
		}
	}
	want := `{"chief":["chief-0.j.ns.svc:2222"],"ps":["ps-0.j.ns.svc:2222","ps-1.j.ns.svc:2222"],` +
		`"worker":["worker-0.j.ns.svc:2222","worker-1.j.ns.svc:2222"]}`
	if got := first[batch.EnvTFCluster]; got != want {
		t.Fatalf("TF_CONFIG's cluster\n got %s\nwant %s", got, want)
	}
}

func TestEnvironmentInEveryContainer(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withInitContainer("worker").withSidecar("worker").obj()
	// A user-provided TF_CONFIG would break the cluster: it is replaced.
	job.CommonSpec().ReplicaSpecs[0].Template.Spec.Containers[0].Env = append(
		job.CommonSpec().ReplicaSpecs[0].Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "TF_CONFIG", Value: "{}"})
	f := newFixture(t, job)
	f.mustSync(job)
	p := podByName(t, f.createdPods(), "j-worker-0")
	all := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
	if len(all) != 3 {
		t.Fatalf("want 3 containers, got %d", len(all))
	}
	for i := range all {
		cfg := f.tfConfigOf(t, &all[i])
		if cfg.Task.Type != "worker" {
			t.Errorf("container %s: task %+v", all[i].Name, cfg.Task)
		}
		if envOf(&all[i])["TF_CONFIG"] == "<duplicate>" {
			t.Errorf("container %s has TF_CONFIG twice", all[i].Name)
		}
	}
}

func TestClusterDomain(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.c.clusterDomain = "cluster.local"
	f.mustSync(job)
	p := podByName(t, f.createdPods(), "j-worker-0")
	if got := envOf(&p.Spec.Containers[0])["MASTER_ADDR"]; got != "master-0.j.ns.svc.cluster.local" {
		t.Fatalf("MASTER_ADDR %q", got)
	}
}

func TestPyTorchEnvironment(t *testing.T) {
	cases := []struct {
		name string
		job  *jobBuilder
		// want: pod name -> MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
		want map[string][4]string
	}{
		{
			name: "master and workers",
			job:  newPyTorchJob("pt").withReplicas("master", 1).withReplicas("worker", 2).withPort("master", "pytorch", 29500),
			want: map[string][4]string{
				"pt-master-0": {"master-0.pt.ns.svc", "29500", "3", "0"},
				"pt-worker-0": {"master-0.pt.ns.svc", "29500", "3", "1"},
				"pt-worker-1": {"master-0.pt.ns.svc", "29500", "3", "2"},
			},
		},
		{
			name: "master listed last is still rank 0",
			job:  newPyTorchJob("pt").withReplicas("worker", 2).withReplicas("master", 1),
			want: map[string][4]string{
				"pt-master-0": {"master-0.pt.ns.svc", "23456", "3", "0"},
				"pt-worker-0": {"master-0.pt.ns.svc", "23456", "3", "1"},
				"pt-worker-1": {"master-0.pt.ns.svc", "23456", "3", "2"},
			},
		},
		{
			name: "no master: index 0 of the first type, ranks in list order",
			job:  newPyTorchJob("pt").withReplicas("node", 2).withReplicas("ps", 1).withPort("node", "pytorchjob-port", 1234),
			want: map[string][4]string{
				"pt-node-0": {"node-0.pt.ns.svc", "1234", "3", "0"},
				"pt-node-1": {"node-0.pt.ns.svc", "1234", "3", "1"},
				"pt-ps-0":   {"node-0.pt.ns.svc", "1234", "3", "2"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.obj()
			f := newFixture(t, job)
			f.mustSync(job)
			pods := f.createdPods()
			if len(pods) != len(tc.want) {
				t.Fatalf("created %v", names(pods))
			}
			for name, w := range tc.want {
				env := envOf(&podByName(t, pods, name).Spec.Containers[0])
				got := [4]string{env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]}
				if got != w {
					t.Errorf("%s: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK = %v, want %v", name, got, w)
				}
				if env["PYTHONUNBUFFERED"] != "1" {
					t.Errorf("%s: PYTHONUNBUFFERED %q", name, env["PYTHONUNBUFFERED"])
				}
				if _, ok := env["PET_NNODES"]; ok {
					t.Errorf("%s: PET_ variables without torchrun", name)
				}
			}
		})
	}
}

func TestTorchrun(t *testing.T) {
	tc := v1beta1.TorchrunConfig{
		Enabled: true, MaxRestarts: ptr.To[int32](2), ProcPerNode: "gpu", RdzvBackend: "c10d",
		ExtraOptions: []string{"--monitor-interval=1"},
	}
	options := []string{"torchrun", "--nnodes=3", "--nproc-per-node=gpu", "--rdzv-backend=c10d",
		"--rdzv-endpoint=master-0.pt.ns.svc:23456", "--rdzv-id=uid-pt", "--max-restarts=2", "--monitor-interval=1"}
	cases := []struct {
		name          string
		command, args []string
		want          []string
	}{
		{"python script", []string{"python", "train.py"}, []string{"--epochs=3"},
			append(append([]string{}, options...), "train.py", "--epochs=3")},
		{"python3 -u with a path", []string{"/usr/bin/python3.11", "-u", "train.py"}, nil,
			append(append([]string{}, options...), "train.py")},
		{"python module", []string{"python3", "-m", "pkg.train"}, []string{"--lr=0.1"},
			append(append([]string{}, options...), "-m", "pkg.train", "--lr=0.1")},
		{"other program", []string{"bash", "run.sh"}, []string{"x"},
			append(append([]string{}, options...), "--no-python", "bash", "run.sh", "x")},
		{"args only", nil, []string{"train.py", "--epochs=3"},
			append(append([]string{}, options...), "train.py", "--epochs=3")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newPyTorchJob("pt").withReplicas("master", 1).withReplicas("worker", 2).withTorchrun(tc)
			for _, typ := range []v1beta1.ReplicaType{"master", "worker"} {
				ctr := &b.replica(typ).Template.Spec.Containers[0]
				ctr.Command, ctr.Args = c.command, c.args
			}
			job := b.obj()
			f := newFixture(t, job)
			f.mustSync(job)
			p := podByName(t, f.createdPods(), "pt-worker-1")
			ctr := &p.Spec.Containers[0]
			if !equalStrings(ctr.Command, c.want) || len(ctr.Args) != 0 {
				t.Fatalf("command %q args %q\nwant command %q", ctr.Command, ctr.Args, c.want)
			}
			env := envOf(ctr)
			wantEnv := map[string]string{
				"PET_NNODES": "3", "PET_NODE_RANK": "2", "PET_NPROC_PER_NODE": "gpu",
				"PET_MASTER_ADDR": "master-0.pt.ns.svc", "PET_MASTER_PORT": "23456",
				"PET_RDZV_BACKEND": "c10d", "PET_MAX_RESTARTS": "2", "RANK": "2", "WORLD_SIZE": "3",
			}
			for k, v := range wantEnv {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

func TestTorchrunDefaults(t *testing.T) {
	// A job written without defaults (nil maxRestarts, empty backend: static,
	// as the job is not elastic).
	job := newPyTorchJob("pt").withReplicas("master", 1).withTorchrun(v1beta1.TorchrunConfig{Enabled: true}).raw()
	f := newFixture(t, job)
	f.mustSync(job)
	ctr := &podByName(t, f.createdPods(), "pt-master-0").Spec.Containers[0]
	want := []string{"torchrun", "--nnodes=1", "--nproc-per-node=1", "--rdzv-backend=static", "--master-addr=master-0.pt.ns.svc",
		"--master-port=23456", "--node-rank=0", "--rdzv-id=uid-pt", "--max-restarts=0", "train.py", "--epochs=3"}
	if !equalStrings(ctr.Command, want) {
		t.Fatalf("command %q, want %q", ctr.Command, want)
	}
}

func TestHeadlessService(t *testing.T) {
	cases := []struct {
		name      string
		job       *jobBuilder
		wantPorts []corev1.ServicePort
	}{
		{
			name: "ports of the training containers",
			job: newTFJob("j").withReplicas("worker", 2).withReplicas("ps", 1).
				withPort("worker", "tfjob-port", 2222).withPort("ps", "tfjob-port", 2222).withPort("ps", "", 5000),
			wantPorts: []corev1.ServicePort{
				{Name: "tfjob-port", Port: 2222, TargetPort: intOrStr(2222), Protocol: corev1.ProtocolTCP},
				{Name: "port-5000", Port: 5000, TargetPort: intOrStr(5000), Protocol: corev1.ProtocolTCP},
			},
		},
		{
			name: "default port when none is declared",
			job:  newPyTorchJob("j").withReplicas("master", 1),
			wantPorts: []corev1.ServicePort{
				{Name: "pytorch", Port: 23456, TargetPort: intOrStr(23456), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.obj()
			f := newFixture(t, job)
			f.mustSync(job)
			svc, err := f.kubeClient.CoreV1().Services("ns").Get(context.Background(), "j", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("service: %v", err)
			}
			if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
				t.Errorf("not headless with unready addresses: %+v", svc.Spec)
			}
			if want := map[string]string{v1beta1.LabelJobName: "j"}; !reflect.DeepEqual(svc.Spec.Selector, want) {
				t.Errorf("selector %v, want %v", svc.Spec.Selector, want)
			}
			if svc.Labels[v1beta1.LabelJobName] != "j" || svc.Labels[v1beta1.LabelJobKind] != keyOf(job).Kind {
				t.Errorf("labels %v", svc.Labels)
			}
			if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != "uid-j" || !*ref.BlockOwnerDeletion {
				t.Errorf("ownerReferences %+v", svc.OwnerReferences)
			}
			if !reflect.DeepEqual(svc.Spec.Ports, tc.wantPorts) {
				t.Errorf("ports %+v, want %+v", svc.Spec.Ports, tc.wantPorts)
			}
			// Once the cache has it, it is left alone.
			f.observe()
			f.mustSync(job)
			for _, a := range f.kubeClient.Actions() {
				if a.GetResource().Resource == "services" {
					t.Errorf("unexpected %s of services on the second sync", a.GetVerb())
				}
			}
		})
	}
}

func TestDebugPods(t *testing.T) {
	job := newPyTorchJob("pt").
		withReplicas("master", 1).withReplicas("worker", 1).
		withInitContainer("master").withInitContainer("worker").
		withTorchrun(v1beta1.TorchrunConfig{Enabled: true}).
		debug(v1beta1.ReplicaDebugSpec{Type: "master", SkipInitContainer: true, Command: []string{"sleep", "3600"}}).
		obj()
	f := newFixture(t, job)
	f.mustSync(job)
	pods := f.createdPods()

	master := podByName(t, pods, "pt-master-0")
	if c := master.Spec.Containers[0]; !equalStrings(c.Command, []string{"sleep", "3600"}) || len(c.Args) != 0 {
		t.Errorf("master: command %q args %q, want the debug command and no args", c.Command, c.Args)
	}
	if len(master.Spec.InitContainers) != 0 {
		t.Errorf("master: init containers kept despite skipInitContainer")
	}
	if master.Annotations[podbuilder.AnnotationRunMode] != podbuilder.RunModeDebug {
		t.Errorf("master: run-mode %q", master.Annotations[podbuilder.AnnotationRunMode])
	}
	worker := podByName(t, pods, "pt-worker-0")
	if c := worker.Spec.Containers[0]; !equalStrings(c.Command, []string{"sleep", "inf"}) || len(c.Args) != 0 {
		t.Errorf("worker: command %q args %q, want sleep inf", c.Command, c.Args)
	}
	if len(worker.Spec.InitContainers) != 1 {
		t.Errorf("worker: init containers dropped without skipInitContainer")
	}
	if envOf(&worker.Spec.Containers[0])["RANK"] != "1" {
		t.Errorf("debug pods keep their environment: %v", worker.Spec.Containers[0].Env)
	}
}

func TestResumePodsUseResumeSpecs(t *testing.T) {
	b := newTFJob("j").withReplicas("worker", 1).withReplicas("ps", 1).withInitContainer("worker").
		paused(v1beta1.ResumeSpec{Type: "worker", SkipInitContainer: true, Command: []string{"python", "resume.py"}, Args: []string{"--from=ckpt"}},
			v1beta1.ResumeSpec{Type: "ps", Args: []string{"--restore"}})
	job := b.obj()
	f := newFixture(t, job)
	f.step(job) // paused from the start: no pods
	if n := len(f.podNames()); n != 0 {
		t.Fatalf("a paused job got %d pods", n)
	}
	resumed := f.job(job)
	resumed.CommonSpec().RunMode.Pause.Enabled = false
	f.updateJob(resumed)
	f.mustSync(resumed)
	pods := f.createdPods()
	w := podByName(t, pods, "j-worker-0")
	if c := w.Spec.Containers[0]; !equalStrings(c.Command, []string{"python", "resume.py"}) || !equalStrings(c.Args, []string{"--from=ckpt"}) {
		t.Errorf("worker: command %q args %q", c.Command, c.Args)
	}
	if len(w.Spec.InitContainers) != 0 {
		t.Errorf("worker: init containers kept despite skipInitContainer")
	}
	ps := podByName(t, pods, "j-ps-0")
	if c := ps.Spec.Containers[0]; !equalStrings(c.Command, []string{"python", "train.py"}) || !equalStrings(c.Args, []string{"--restore"}) {
		t.Errorf("ps: command %q args %q: only the given args should change", c.Command, c.Args)
	}
}

func TestNeverPausedJobIgnoresResumeSpecs(t *testing.T) {
	b := newTFJob("j").withReplicas("worker", 1).
		paused(v1beta1.ResumeSpec{Type: "worker", Command: []string{"python", "resume.py"}})
	b.spec().RunMode.Pause.Enabled = false
	job := b.obj()
	f := newFixture(t, job)
	f.mustSync(job)
	c := podByName(t, f.createdPods(), "j-worker-0").Spec.Containers[0]
	if !equalStrings(c.Command, []string{"python", "train.py"}) {
		t.Fatalf("command %q: resumeSpecs apply only after a pause", c.Command)
	}
}

func intOrStr(i int32) intstr.IntOrString { return intstr.FromInt32(i) }
