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

package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestTensorFlowRules(t *testing.T) {
	withReplicas := func(specs ...batch.ReplicaSpec) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs = specs }
	}
	r := func(typ batch.ReplicaType, n int32) batch.ReplicaSpec { return replica(typ, n, "tensorflow") }
	inOrder := func(j *batch.TensorFlowTrainingJob) { j.Spec.RunPolicy.StartupPolicy = batch.StartupPolicyInOrder }
	withPort := func(containerIndex int, p corev1.ContainerPort) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) {
			pod := &j.Spec.ReplicaSpecs[0].Template.Spec
			pod.Containers = append(pod.Containers, container("sidecar"))
			pod.Containers[containerIndex].Ports = []corev1.ContainerPort{p}
		}
	}

	cases := []struct {
		name string
		job  *batch.TensorFlowTrainingJob
		want []wantErr
	}{
		{"chief, ps and workers", tfJob(), nil},
		{"workers only", tfJob(withReplicas(r(batch.ReplicaTypeWorker, 4))), nil},
		{"chief only", tfJob(withReplicas(r(batch.ReplicaTypeChief, 1))), nil},
		{"every type", tfJob(withReplicas(r(batch.ReplicaTypeChief, 1), r(batch.ReplicaTypePS, 2),
			r(batch.ReplicaTypeWorker, 4), r(batch.ReplicaTypeEvaluator, 1))), nil},
		{"no chief replica but workers", tfJob(withReplicas(r(batch.ReplicaTypeChief, 0), r(batch.ReplicaTypeWorker, 1))), nil},
		{"ps only", tfJob(withReplicas(r(batch.ReplicaTypePS, 2))), []wantErr{required("spec.replicaSpecs")}},
		{"ps and evaluator only", tfJob(withReplicas(r(batch.ReplicaTypePS, 1), r(batch.ReplicaTypeEvaluator, 1))),
			[]wantErr{required("spec.replicaSpecs")}},
		{"chief and workers without replicas", tfJob(withReplicas(r(batch.ReplicaTypeChief, 0), r(batch.ReplicaTypeWorker, 0))),
			[]wantErr{required("spec.replicaSpecs")}},
		{"two chiefs", tfJob(withReplicas(r(batch.ReplicaTypeChief, 2))), []wantErr{invalid("spec.replicaSpecs[0].replicas")}},
		{"two evaluators", tfJob(withReplicas(r(batch.ReplicaTypeWorker, 1), r(batch.ReplicaTypeEvaluator, 2))),
			[]wantErr{invalid("spec.replicaSpecs[1].replicas")}},
		{"unknown type", tfJob(withReplicas(r(batch.ReplicaTypeWorker, 1), r("launcher", 1))),
			[]wantErr{notSupported("spec.replicaSpecs[1].type")}},
		{"master is not canonical here", tfJob(withReplicas(r(batch.ReplicaTypeMaster, 1))),
			[]wantErr{notSupported("spec.replicaSpecs[0].type")}},
		{"capitalised type is not canonical here", tfJob(withReplicas(r("Worker", 1))),
			[]wantErr{notSupported("spec.replicaSpecs[0].type")}},
		{"chief twice", tfJob(withReplicas(r(batch.ReplicaTypeChief, 1), r(batch.ReplicaTypeChief, 1))),
			[]wantErr{duplicate("spec.replicaSpecs[1].type")}},
		{"InOrder with a chief", tfJob(inOrder, withReplicas(r(batch.ReplicaTypeChief, 1), r(batch.ReplicaTypeWorker, 2))), nil},
		{"InOrder with parameter servers", tfJob(inOrder, withReplicas(r(batch.ReplicaTypePS, 1), r(batch.ReplicaTypeWorker, 2))), nil},
		{"InOrder with no leader", tfJob(inOrder, withReplicas(r(batch.ReplicaTypeWorker, 2), r(batch.ReplicaTypeEvaluator, 1))),
			[]wantErr{invalid("spec.runPolicy.startupPolicy")}},
		{"InOrder with leaders of no replicas", tfJob(inOrder, withReplicas(r(batch.ReplicaTypeChief, 0), r(batch.ReplicaTypePS, 0), r(batch.ReplicaTypeWorker, 2))),
			[]wantErr{invalid("spec.runPolicy.startupPolicy")}},
		{"AnyOrder with no leader", tfJob(withReplicas(r(batch.ReplicaTypeWorker, 2)), func(j *batch.TensorFlowTrainingJob) {
			j.Spec.RunPolicy.StartupPolicy = batch.StartupPolicyAnyOrder
		}), nil},
		{"training port over TCP", tfJob(withPort(0, corev1.ContainerPort{Name: "tfjob-port", ContainerPort: 2222, Protocol: corev1.ProtocolTCP})), nil},
		{"training port over UDP", tfJob(withPort(0, corev1.ContainerPort{Name: "tensorflow", ContainerPort: 2222, Protocol: corev1.ProtocolUDP})),
			[]wantErr{invalid("spec.replicaSpecs[0].template.spec.containers[0].ports[0].protocol")}},
		{"sidecar port named tensorflow over UDP", tfJob(withPort(1, corev1.ContainerPort{Name: "tensorflow", ContainerPort: 2222, Protocol: corev1.ProtocolUDP})), nil},
		{"training container found by name", tfJob(func(j *batch.TensorFlowTrainingJob) {
			pod := &j.Spec.ReplicaSpecs[0].Template.Spec
			pod.Containers = []corev1.Container{container("sidecar"), container("tensorflow")}
			pod.Containers[1].Ports = []corev1.ContainerPort{{Name: "tensorflow", ContainerPort: 2222, Protocol: corev1.ProtocolSCTP}}
		}), []wantErr{invalid("spec.replicaSpecs[0].template.spec.containers[1].ports[0].protocol")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateTensorFlowTrainingJob(tc.job), tc.want...)
		})
	}
}

func TestPyTorchRules(t *testing.T) {
	withReplicas := func(specs ...batch.ReplicaSpec) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) { j.Spec.ReplicaSpecs = specs }
	}
	r := func(typ batch.ReplicaType, n int32) batch.ReplicaSpec { return replica(typ, n, "pytorch") }
	withTorchrun := func(mod func(*batch.TorchrunConfig)) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			tc := &batch.TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](0), ProcPerNode: "1", RdzvBackend: batch.RendezvousBackendC10d}
			mod(tc)
			j.Spec.TorchrunConfig = tc
		}
	}
	withElastic := func(e batch.ElasticConfig) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) { j.Spec.Elastic = &e }
	}
	long := batch.ReplicaType(strings.Repeat("n", 60))

	cases := []struct {
		name string
		job  *batch.PyTorchTrainingJob
		want []wantErr
	}{
		{"master and workers", ptJob(), nil},
		{"nodes only", ptJob(withReplicas(r(batch.ReplicaTypeNode, 4))), nil},
		{"master, ps and workers", ptJob(withReplicas(r(batch.ReplicaTypeMaster, 1), r(batch.ReplicaTypePS, 1), r(batch.ReplicaTypeWorker, 3))), nil},
		{"any label as type", ptJob(withReplicas(r("node", 2), r("data-loader", 1), r("0x", 1))), nil},
		{"type not a label", ptJob(withReplicas(r("node", 1), r("Data_Loader", 1))), []wantErr{invalid("spec.replicaSpecs[1].type")}},
		{"capitalised type is not canonical here", ptJob(withReplicas(r("Master", 1))), []wantErr{invalid("spec.replicaSpecs[0].type")}},
		{"type missing", ptJob(withReplicas(r("", 1))), []wantErr{required("spec.replicaSpecs[0].type")}},
		{"two masters", ptJob(withReplicas(r(batch.ReplicaTypeMaster, 2), r(batch.ReplicaTypeWorker, 1))),
			[]wantErr{invalid("spec.replicaSpecs[0].replicas")}},
		{"no master replica", ptJob(withReplicas(r(batch.ReplicaTypeMaster, 0), r(batch.ReplicaTypeWorker, 1))),
			[]wantErr{invalid("spec.replicaSpecs[0].replicas")}},
		{"master listed second", ptJob(withReplicas(r(batch.ReplicaTypeWorker, 2), r(batch.ReplicaTypeMaster, 1))), nil},
		{"first type without replicas and no master", ptJob(withReplicas(r(batch.ReplicaTypeWorker, 0), r(batch.ReplicaTypeNode, 2))),
			[]wantErr{invalid("spec.replicaSpecs[0].replicas")}},
		{"later type without replicas", ptJob(withReplicas(r(batch.ReplicaTypeNode, 1), r(batch.ReplicaTypeWorker, 0))), nil},
		{"long type, hostnames fit", ptJob(withReplicas(r(long, 100))), nil},
		{"long type, hostnames too long", ptJob(withReplicas(r(long, 1000))), []wantErr{invalid("spec.replicaSpecs[0].type")}},

		{"torchrun defaults", ptJob(withTorchrun(func(*batch.TorchrunConfig) {})), nil},
		{"torchrun fully set", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) {
			tc.MaxRestarts = ptr.To[int32](3)
			tc.ProcPerNode = "gpu"
			tc.RdzvBackend = batch.RendezvousBackendEtcdV2
			tc.ExtraOptions = []string{"--rdzv-conf=timeout=900", "--log-dir=/tmp/logs"}
		})), nil},
		{"torchrun disabled and unset", ptJob(func(j *batch.PyTorchTrainingJob) { j.Spec.TorchrunConfig = &batch.TorchrunConfig{} }), nil},
		{"torchrun eight processes", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ProcPerNode = "8" })), nil},
		{"torchrun negative restarts", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.MaxRestarts = ptr.To[int32](-1) })),
			[]wantErr{invalid("spec.torchrunConfig.maxRestarts")}},
		{"torchrun zero processes", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ProcPerNode = "0" })),
			[]wantErr{invalid("spec.torchrunConfig.procPerNode")}},
		{"torchrun negative processes", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ProcPerNode = "-2" })),
			[]wantErr{invalid("spec.torchrunConfig.procPerNode")}},
		{"torchrun signed processes", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ProcPerNode = "+2" })),
			[]wantErr{invalid("spec.torchrunConfig.procPerNode")}},
		{"torchrun huge process count", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ProcPerNode = "99999999999" })),
			[]wantErr{invalid("spec.torchrunConfig.procPerNode")}},
		{"torchrun processes per CPU", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ProcPerNode = "cpu" })),
			[]wantErr{invalid("spec.torchrunConfig.procPerNode")}},
		{"torchrun static", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.RdzvBackend = batch.RendezvousBackendStatic })), nil},
		{"torchrun unknown backend", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.RdzvBackend = "zookeeper" })),
			[]wantErr{notSupported("spec.torchrunConfig.rdzvBackend")}},
		{"torchrun empty option", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.ExtraOptions = []string{"--a=b", ""} })),
			[]wantErr{invalid("spec.torchrunConfig.extraOptions[1]")}},

		{"elastic range", ptJob(withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1),
			MaxReplicas: ptr.To[int32](4), ExpectedReplicas: ptr.To[int32](2)})), nil},
		{"elastic with c10d", ptJob(withTorchrun(func(*batch.TorchrunConfig) {}),
			withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)})), nil},
		{"elastic with etcd-v2", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.RdzvBackend = batch.RendezvousBackendEtcdV2 }),
			withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)})), nil},
		{"elastic with static", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.RdzvBackend = batch.RendezvousBackendStatic }),
			withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)})),
			[]wantErr{invalid("spec.torchrunConfig.rdzvBackend")}},
		{"elastic with static, torchrun not enabled yet", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) {
			tc.Enabled = false
			tc.RdzvBackend = batch.RendezvousBackendStatic
		}), withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)})),
			[]wantErr{invalid("spec.torchrunConfig.rdzvBackend")}},
		{"static with an elastic range not enabled", ptJob(withTorchrun(func(tc *batch.TorchrunConfig) { tc.RdzvBackend = batch.RendezvousBackendStatic }),
			withElastic(batch.ElasticConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)})), nil},
		{"elastic range of one", ptJob(withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](2)})), nil},
		{"elastic master only", ptJob(withReplicas(r(batch.ReplicaTypeMaster, 1)), withElastic(batch.ElasticConfig{Enabled: true,
			MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](3)})), []wantErr{invalid("spec.replicaSpecs[0].type")}},
		{"elastic master listed last", ptJob(withReplicas(r("node", 2), r(batch.ReplicaTypeMaster, 1)), withElastic(batch.ElasticConfig{Enabled: true,
			MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](3)})), nil},
		{"elastic one type", ptJob(withReplicas(r("node", 2)), withElastic(batch.ElasticConfig{Enabled: true,
			MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](3)})), nil},
		{"elastic minimum below the fixed types", ptJob(withReplicas(r(batch.ReplicaTypeMaster, 1), r("ps", 2), r("worker", 2)),
			withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](6)})),
			[]wantErr{invalid("spec.elastic.minReplicas")}},
		{"elastic minimum at the fixed types", ptJob(withReplicas(r(batch.ReplicaTypeMaster, 1), r("ps", 2), r("worker", 2)),
			withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](6)})), nil},
		{"elastic without ends", ptJob(withElastic(batch.ElasticConfig{Enabled: true})),
			[]wantErr{required("spec.elastic.minReplicas"), required("spec.elastic.maxReplicas")}},
		{"elastic disabled without ends", ptJob(withElastic(batch.ElasticConfig{MaxReplicas: ptr.To[int32](3)})), nil},
		{"elastic minimum zero", ptJob(withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](0), MaxReplicas: ptr.To[int32](2)})),
			[]wantErr{invalid("spec.elastic.minReplicas")}},
		{"elastic maximum below minimum", ptJob(withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](2)})),
			[]wantErr{invalid("spec.elastic.maxReplicas")}},
		{"elastic maximum zero", ptJob(withElastic(batch.ElasticConfig{MaxReplicas: ptr.To[int32](0)})),
			[]wantErr{invalid("spec.elastic.maxReplicas")}},
		{"elastic expectation below range", ptJob(withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2),
			MaxReplicas: ptr.To[int32](4), ExpectedReplicas: ptr.To[int32](1)})), []wantErr{invalid("spec.elastic.expectedReplicas")}},
		{"elastic expectation above range", ptJob(withElastic(batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2),
			MaxReplicas: ptr.To[int32](4), ExpectedReplicas: ptr.To[int32](5)})), []wantErr{invalid("spec.elastic.expectedReplicas")}},
		{"elastic expectation zero without range", ptJob(withElastic(batch.ElasticConfig{ExpectedReplicas: ptr.To[int32](0)})),
			[]wantErr{invalid("spec.elastic.expectedReplicas")}},
		{"training port over UDP", ptJob(func(j *batch.PyTorchTrainingJob) {
			j.Spec.ReplicaSpecs[0].Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "pytorchjob-port", ContainerPort: 23456, Protocol: corev1.ProtocolUDP}}
		}), []wantErr{invalid("spec.replicaSpecs[0].template.spec.containers[0].ports[0].protocol")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePyTorchTrainingJob(tc.job), tc.want...)
		})
	}
}

func TestJobNames(t *testing.T) {
	withName := func(name string) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) { j.Name = name }
	}
	withTensorBoard := func(j *batch.TensorFlowTrainingJob) {
		j.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: []string{"t9k://pvc/logs/x"}}
	}
	cases := []struct {
		name string
		job  *batch.TensorFlowTrainingJob
		want []wantErr
	}{
		{"longest name", tfJob(withName(strings.Repeat("a", 63))), nil},
		{"longest name with a TensorBoard", tfJob(withName(strings.Repeat("a", 51)), withTensorBoard), nil},
		{"name too long for the TensorBoard", tfJob(withName(strings.Repeat("a", 52)), withTensorBoard), []wantErr{invalid("metadata.name")}},
		{"name too long", tfJob(withName(strings.Repeat("a", 64))), []wantErr{invalid("metadata.name")}},
		{"name too long, with a TensorBoard", tfJob(withName(strings.Repeat("a", 64)), withTensorBoard), []wantErr{invalid("metadata.name")}},
		{"name starting with a digit", tfJob(withName("1mnist")), []wantErr{invalid("metadata.name")}},
		{"name with a dot", tfJob(withName("mnist.v2")), []wantErr{invalid("metadata.name")}},
		{"name with capitals", tfJob(withName("MNIST")), []wantErr{invalid("metadata.name")}},
		{"name missing", tfJob(withName("")), []wantErr{required("metadata.name")}},
		{"namespace missing", tfJob(func(j *batch.TensorFlowTrainingJob) { j.Namespace = "" }), []wantErr{required("metadata.namespace")}},
		{"labels invalid", tfJob(func(j *batch.TensorFlowTrainingJob) { j.Labels = map[string]string{"team": "a b"} }),
			[]wantErr{invalid("metadata.labels")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateTensorFlowTrainingJob(tc.job), tc.want...)
		})
	}

	t.Run("message names the TensorBoard", func(t *testing.T) {
		errs := ValidateTensorFlowTrainingJob(tfJob(withName(strings.Repeat("a", 55)), withTensorBoard))
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, "no more than 51 characters") ||
			!strings.Contains(errs[0].Detail, strings.Repeat("a", 55)+"-tensorboard") {
			t.Errorf("unexpected errors: %v", errs)
		}
	})
	t.Run("message names the hostname", func(t *testing.T) {
		long := batch.ReplicaType(strings.Repeat("n", 60))
		errs := ValidatePyTorchTrainingJob(ptJob(func(j *batch.PyTorchTrainingJob) {
			j.Spec.ReplicaSpecs = []batch.ReplicaSpec{replica(long, 1000, "pytorch")}
		}))
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, string(long)+"-999") {
			t.Errorf("unexpected errors: %v", errs)
		}
	})
}

func TestValidateDebugRequest(t *testing.T) {
	request := func(types ...batch.ReplicaType) *batch.DebugRequest {
		r := &batch.DebugRequest{}
		for _, typ := range types {
			r.ReplicaSpecs = append(r.ReplicaSpecs, batch.ReplicaDebugSpec{Type: typ})
		}
		return r
	}
	cases := []struct {
		name    string
		request *batch.DebugRequest
		want    []wantErr
	}{
		{"empty", request(), nil},
		{"types", request("worker", "master", "node"), nil},
		{"Kubeflow spellings", request("Chief", "PS", "Worker"), nil},
		{"type missing", request("worker", ""), []wantErr{required("replicaSpecs[1].type")}},
		{"type not a label", request("data_loader"), []wantErr{invalid("replicaSpecs[0].type")}},
		{"type twice", request("worker", "worker"), []wantErr{duplicate("replicaSpecs[1].type")}},
		{"type twice in different case", request("worker", "Worker"), []wantErr{duplicate("replicaSpecs[1].type")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateDebugRequest(tc.request), tc.want...)
		})
	}
}

func xgbJob(specs ...batch.ReplicaSpec) *batch.XGBoostTrainingJob {
	return &batch.XGBoostTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "higgs", Namespace: "default", ResourceVersion: "1"},
		Spec: batch.XGBoostTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{
			ReplicaSpecs: specs,
			RunPolicy:    defaultedRunPolicy(),
		}},
	}
}

func TestXGBoostRules(t *testing.T) {
	r := func(typ batch.ReplicaType, n int32) batch.ReplicaSpec { return replica(typ, n, "xgboost") }
	cases := []struct {
		name string
		job  *batch.XGBoostTrainingJob
		want []wantErr
	}{
		{"master and workers", xgbJob(r(batch.ReplicaTypeMaster, 1), r(batch.ReplicaTypeWorker, 2)), nil},
		{"master alone", xgbJob(r(batch.ReplicaTypeMaster, 1)), nil},
		{"workers without a master", xgbJob(r(batch.ReplicaTypeWorker, 2)), []wantErr{required("spec.replicaSpecs")}},
		{"two masters", xgbJob(r(batch.ReplicaTypeMaster, 2), r(batch.ReplicaTypeWorker, 1)),
			[]wantErr{invalid("spec.replicaSpecs[0].replicas")}},
		{"no master replica", xgbJob(r(batch.ReplicaTypeMaster, 0), r(batch.ReplicaTypeWorker, 1)),
			[]wantErr{invalid("spec.replicaSpecs[0].replicas")}},
		{"unknown type", xgbJob(r(batch.ReplicaTypeMaster, 1), r("launcher", 1)),
			[]wantErr{notSupported("spec.replicaSpecs[1].type")}},
		{"negative workers", xgbJob(r(batch.ReplicaTypeMaster, 1), r(batch.ReplicaTypeWorker, -1)),
			[]wantErr{invalid("spec.replicaSpecs[1].replicas")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateXGBoostTrainingJob(tc.job), tc.want...)
		})
	}
}

func genericJob(rules []batch.ReplicaRule, specs ...batch.ReplicaSpec) *batch.GenericJob {
	return &batch.GenericJob{
		ObjectMeta: metav1.ObjectMeta{Name: "jax", Namespace: "default", ResourceVersion: "1"},
		Spec: batch.GenericJobSpec{
			TrainingJobSpec: batch.TrainingJobSpec{ReplicaSpecs: specs, RunPolicy: defaultedRunPolicy()},
			SuccessRules:    rules,
		},
	}
}

func withFailureRules(job *batch.GenericJob, rules ...batch.ReplicaRule) *batch.GenericJob {
	job.Spec.FailureRules = rules
	return job
}

func withElastic(job *batch.GenericJob, minReplicas, maxReplicas int32) *batch.GenericJob {
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: true, MinReplicas: &minReplicas, MaxReplicas: &maxReplicas}
	return job
}

func TestGenericRules(t *testing.T) {
	r := func(typ batch.ReplicaType, n int32) batch.ReplicaSpec { return replica(typ, n, "main") }
	rule := func(selectors ...batch.ReplicaSelector) batch.ReplicaRule {
		return batch.ReplicaRule{Replicas: selectors}
	}
	withEnv := func(spec batch.ReplicaSpec, name string) batch.ReplicaSpec {
		spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: name, Value: "x"}}
		return spec
	}
	cases := []struct {
		name string
		job  *batch.GenericJob
		want []wantErr
	}{
		{"any types, no rules", genericJob(nil, r("coordinator", 1), r("param-server", 2)), nil},
		{"a rule by type and one by index", genericJob([]batch.ReplicaRule{
			rule(batch.ReplicaSelector{Type: "worker"}),
			rule(batch.ReplicaSelector{Type: "worker", Indexes: []int32{1}}, batch.ReplicaSelector{Type: "coordinator"}),
		}, r("coordinator", 1), r("worker", 2)), nil},
		{"a type not in the job", genericJob([]batch.ReplicaRule{rule(batch.ReplicaSelector{Type: "ps"})}, r("worker", 2)),
			[]wantErr{notSupported("spec.successRules[0].replicas[0].type")}},
		{"a type without replicas", genericJob([]batch.ReplicaRule{rule(batch.ReplicaSelector{Type: "ps"})}, r("worker", 2), r("ps", 0)),
			[]wantErr{invalid("spec.successRules[0].replicas[0].type")}},
		{"an index out of range", genericJob([]batch.ReplicaRule{rule(batch.ReplicaSelector{Type: "worker", Indexes: []int32{0, 2}})},
			r("worker", 2)), []wantErr{invalid("spec.successRules[0].replicas[0].indexes[1]")}},
		{"a rule of nothing", genericJob([]batch.ReplicaRule{rule()}, r("worker", 2)),
			[]wantErr{required("spec.successRules[0].replicas")}},
		{"a variable of ours", genericJob(nil, withEnv(r("worker", 2), "TENSORSTACK_WORKER_HOSTS")),
			[]wantErr{invalid("spec.replicaSpecs[0].template.spec.containers[0].env[0].name")}},
		{"another kind's variable", genericJob(nil, withEnv(r("worker", 2), "MASTER_ADDR")), nil},
		{"a failure rule", withFailureRules(genericJob(nil, r("chief", 1), r("worker", 2)),
			rule(batch.ReplicaSelector{Type: "chief"})), nil},
		{"a failure rule naming a type not in the job", withFailureRules(genericJob(nil, r("worker", 2)),
			rule(batch.ReplicaSelector{Type: "worker"}), rule(batch.ReplicaSelector{Type: "chief"})),
			[]wantErr{notSupported("spec.failureRules[1].replicas[0].type")}},
		{"elastic, the last type scaled", withElastic(genericJob([]batch.ReplicaRule{rule(batch.ReplicaSelector{Type: "worker"})},
			r("coordinator", 1), r("worker", 2)), 2, 6), nil},
		{"elastic, a rule naming an index of the scaled type", withElastic(genericJob([]batch.ReplicaRule{
			rule(batch.ReplicaSelector{Type: "worker", Indexes: []int32{0}})}, r("coordinator", 1), r("worker", 2)), 2, 6),
			[]wantErr{forbidden("spec.successRules[0].replicas[0].indexes")}},
		{"elastic, an index of a fixed type", withElastic(genericJob([]batch.ReplicaRule{
			rule(batch.ReplicaSelector{Type: "coordinator", Indexes: []int32{0}})}, r("coordinator", 1), r("worker", 2)), 2, 6), nil},
		{"elastic, a minimum below the fixed types", withElastic(genericJob(nil, r("coordinator", 2), r("worker", 2)), 1, 6),
			[]wantErr{invalid("spec.elastic.minReplicas")}},
		{"elastic, a type named master is scaled when last", withElastic(genericJob(nil, r("worker", 2), r("master", 1)), 2, 6), nil},
		{"elastic, no maximum", withElastic(genericJob(nil, r("worker", 2)), 1, 0),
			[]wantErr{invalid("spec.elastic.maxReplicas")}},
		{"a failure rule's index out of range", withFailureRules(genericJob(nil, r("worker", 2)),
			rule(batch.ReplicaSelector{Type: "worker", Indexes: []int32{5}})),
			[]wantErr{invalid("spec.failureRules[0].replicas[0].indexes[0]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateGenericJob(tc.job), tc.want...)
		})
	}
}
