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

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/integration/framework"
)

// hostileKind is one kind as the hostile requests build it: raw JSON, so
// that a request may hold what no Go type can.
type hostileKind struct {
	kind, resource, container string
	types                     []string
	// envNames are the kind's own variables, which the controller sets.
	envNames []string
}

var hostileKinds = []hostileKind{
	{"TensorFlowTrainingJob", v1beta1.TensorFlowTrainingJobResource, v1beta1.TensorFlowContainerName,
		[]string{"chief", "worker"}, batch.TensorFlowEnvNames()},
	{"PyTorchTrainingJob", v1beta1.PyTorchTrainingJobResource, v1beta1.PyTorchContainerName,
		[]string{"master", "worker"}, batch.PyTorchEnvNames()},
	{"XGBoostTrainingJob", v1beta1.XGBoostTrainingJobResource, v1beta1.XGBoostContainerName,
		[]string{"master", "worker"}, batch.XGBoostEnvNames()},
	{"GenericJob", v1beta1.GenericJobResource, "main",
		[]string{"coordinator", "worker"}, append(batch.GenericEnvNames(), batch.GenericHostsEnv("worker"), "TENSORSTACK_ANYTHING")},
	{"MPIJob", v1beta1.MPIJobResource, "main", []string{"launcher", "worker"}, batch.MPIEnvNames()},
}

// job is a valid job of the kind, as JSON objects, for a case to spoil.
func (k hostileKind) job(name string) map[string]any {
	var specs []any
	for _, typ := range k.types {
		specs = append(specs, map[string]any{
			"type": typ, "replicas": 1,
			"template": map[string]any{"spec": map[string]any{
				"initContainers": []any{map[string]any{"name": "fetch", "image": "registry.example/fetch:1"}},
				"containers": []any{map[string]any{
					"name": k.container, "image": "registry.example/train:1", "command": []any{"python", "train.py"},
				}},
			}},
		})
	}
	return map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": k.kind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicaSpecs": specs},
	}
}

// replicaSpec is the job's i-th replica spec, to change in place.
func replicaSpec(job map[string]any, i int) map[string]any {
	return job["spec"].(map[string]any)["replicaSpecs"].([]any)[i].(map[string]any)
}

// podSpec is the i-th replica spec's pod spec, to change in place.
func podSpec(job map[string]any, i int) map[string]any {
	return replicaSpec(job, i)["template"].(map[string]any)["spec"].(map[string]any)
}

// TestHostileSpecsOfEveryKind: a create that no kind can run is refused
// with a 4xx naming the field, for every kind: a replica count beyond
// int32, 1,000 replica types (one error, not one per type), and a template
// setting a variable the controller sets in every container of the job's
// pods (the controller's value would replace it without a word). Nothing
// is stored.
func TestHostileSpecsOfEveryKind(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	const namespace = "hostile"
	for _, k := range hostileKinds {
		type hostileCase struct {
			name      string
			spoil     func(job map[string]any)
			wantCode  int
			wantField string // in the message, and as the one cause's field for a 422
		}
		// A count beyond int32 fails to decode, before any validation, as
		// it does for a Deployment: the answer names the field's path
		// (through the Go type that embeds the common spec), the value
		// and the type.
		cases := []hostileCase{{
			name:      "replicas of 2^31",
			spoil:     func(job map[string]any) { replicaSpec(job, 1)["replicas"] = int64(1) << 31 },
			wantCode:  http.StatusBadRequest,
			wantField: "number 2147483648 into Go struct field ReplicaSpec.spec.TrainingJobSpec.replicaSpecs.replicas of type int32",
		}, {
			name:      "replicas of -2^31-1",
			spoil:     func(job map[string]any) { replicaSpec(job, 0)["replicas"] = -(int64(1) << 31) - 1 },
			wantCode:  http.StatusBadRequest,
			wantField: "number -2147483649 into Go struct field ReplicaSpec.spec.TrainingJobSpec.replicaSpecs.replicas of type int32",
		}}
		// 1,000 replica types, each a copy of the first under a new name.
		cases = append(cases, hostileCase{
			name: "1,000 replica types",
			spoil: func(job map[string]any) {
				first := replicaSpec(job, 0)
				specs := make([]any, 1000)
				for i := range specs {
					spec := map[string]any{}
					for key, value := range first {
						spec[key] = value
					}
					spec["type"] = fmt.Sprintf("t%d", i)
					specs[i] = spec
				}
				job["spec"].(map[string]any)["replicaSpecs"] = specs
			},
			wantCode:  http.StatusUnprocessableEntity,
			wantField: "spec.replicaSpecs",
		})
		for _, name := range append(k.envNames, batch.JobEnvNames()...) {
			cases = append(cases, hostileCase{
				name: "the template sets " + name,
				spoil: func(job map[string]any) {
					container := podSpec(job, 1)["containers"].([]any)[0].(map[string]any)
					container["env"] = []any{map[string]any{"name": "DATA", "value": "/data"}, map[string]any{"name": name, "value": "0"}}
				},
				wantCode:  http.StatusUnprocessableEntity,
				wantField: "spec.replicaSpecs[1].template.spec.containers[0].env[1].name",
			})
		}
		cases = append(cases, hostileCase{
			name: "an init container sets " + k.envNames[0],
			spoil: func(job map[string]any) {
				init := podSpec(job, 0)["initContainers"].([]any)[0].(map[string]any)
				init["env"] = []any{map[string]any{"name": k.envNames[0], "value": "0"}}
			},
			wantCode:  http.StatusUnprocessableEntity,
			wantField: "spec.replicaSpecs[0].template.spec.initContainers[0].env[0].name",
		})
		for i, tc := range cases {
			t.Run(k.kind+"/"+tc.name, func(t *testing.T) {
				name := fmt.Sprintf("hostile-%d", i)
				job := k.job(name)
				tc.spoil(job)
				body, err := json.Marshal(job)
				if err != nil {
					t.Fatal(err)
				}
				err = s.Client.BatchV1beta1().RESTClient().Post().
					AbsPath(path.Join("/apis", v1beta1.SchemeGroupVersion.String(), "namespaces", namespace, k.resource)).
					SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
				var status apierrors.APIStatus
				if !errors.As(err, &status) {
					t.Fatalf("create: %v, want %d naming %s", err, tc.wantCode, tc.wantField)
				}
				got := status.Status()
				if int(got.Code) != tc.wantCode || !strings.Contains(got.Message, tc.wantField) {
					t.Errorf("create: %d %q, want %d naming %s", got.Code, got.Message, tc.wantCode, tc.wantField)
				}
				if tc.wantCode == http.StatusUnprocessableEntity {
					if got.Details == nil || len(got.Details.Causes) != 1 || got.Details.Causes[0].Field != tc.wantField {
						t.Errorf("causes %+v, want one, of field %s", got.Details, tc.wantField)
					}
				}
				err = s.Client.BatchV1beta1().RESTClient().Get().
					AbsPath(path.Join("/apis", v1beta1.SchemeGroupVersion.String(), "namespaces", namespace, k.resource, name)).
					Do(ctx).Error()
				if !apierrors.IsNotFound(err) {
					t.Errorf("after the refusal, a get: %v, want NotFound", err)
				}
			})
		}
	}
}

// TestGenericJobRulesNameItsReplicas: a generic job's success and failure
// rules name replicas the job has, each once; anything else is a 422
// naming the rule's field.
func TestGenericJobRulesNameItsReplicas(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	generic := hostileKinds[3]
	for i, tc := range []struct {
		name, rules, wantField string
	}{
		{"a type the job does not have", `[{"replicas": [{"type": "ps"}]}]`, "spec.successRules[0].replicas[0].type"},
		{"an index beyond the type's replicas", `[{"replicas": [{"type": "worker", "indexes": [1]}]}]`, "spec.successRules[0].replicas[0].indexes[0]"},
		{"a type twice in a rule", `[{"replicas": [{"type": "worker"}, {"type": "worker"}]}]`, "spec.successRules[0].replicas[1].type"},
		{"an index twice", `[{"replicas": [{"type": "coordinator"}]}, {"replicas": [{"type": "worker", "indexes": [0, 0]}]}]`, "spec.successRules[1].replicas[0].indexes"},
		{"a rule of no replicas", `[{"replicas": []}]`, "spec.successRules[0].replicas"},
		{"a failure rule naming a type the job does not have", `[{"replicas": [{"type": "chief"}]}]`, "spec.failureRules[0].replicas[0].type"},
		{"a failure rule's index beyond the type's replicas", `[{"replicas": [{"type": "worker", "indexes": [3]}]}]`, "spec.failureRules[0].replicas[0].indexes[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := generic.job(fmt.Sprintf("rules-%d", i))
			var rules any
			if err := json.Unmarshal([]byte(tc.rules), &rules); err != nil {
				t.Fatal(err)
			}
			field := "successRules"
			if strings.HasPrefix(tc.wantField, "spec.failureRules") {
				field = "failureRules"
			}
			job["spec"].(map[string]any)[field] = rules
			body, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Client.BatchV1beta1().RESTClient().Post().
				AbsPath(path.Join("/apis", v1beta1.SchemeGroupVersion.String(), "namespaces", "rules", generic.resource)).
				SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity ||
				!strings.Contains(status.Status().Message, tc.wantField) {
				t.Errorf("create: %v, want a 422 naming %s", err, tc.wantField)
			}
		})
	}
}

// TestMPIJobRefusals: an MPI job has one launcher and at least one worker,
// at least one slot per worker, an MPI it knows and an absolute key path;
// anything else is a 422 naming the field.
func TestMPIJobRefusals(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	mpi := hostileKinds[4]
	for i, tc := range []struct {
		name      string
		spoil     func(job map[string]any)
		wantField string
	}{
		{"two launchers", func(job map[string]any) { replicaSpec(job, 0)["replicas"] = 2 }, "spec.replicaSpecs[0].replicas"},
		{"no launcher", func(job map[string]any) { replicaSpec(job, 0)["replicas"] = 0 }, "spec.replicaSpecs[0].replicas"},
		{"no worker", func(job map[string]any) { replicaSpec(job, 1)["replicas"] = 0 }, "spec.replicaSpecs"},
		{"an unknown type", func(job map[string]any) { replicaSpec(job, 1)["type"] = "master" }, "spec.replicaSpecs[1].type"},
		{"slotsPerWorker 0", func(job map[string]any) { job["spec"].(map[string]any)["slotsPerWorker"] = 0 }, "spec.slotsPerWorker"},
		{"an unknown MPI", func(job map[string]any) { job["spec"].(map[string]any)["mpiImplementation"] = "LAM" }, "spec.mpiImplementation"},
		{"a relative key path", func(job map[string]any) { job["spec"].(map[string]any)["sshAuthMountPath"] = ".ssh" }, "spec.sshAuthMountPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := mpi.job(fmt.Sprintf("mpi-%d", i))
			tc.spoil(job)
			body, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Client.BatchV1beta1().RESTClient().Post().
				AbsPath(path.Join("/apis", v1beta1.SchemeGroupVersion.String(), "namespaces", "mpi", mpi.resource)).
				SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity ||
				!strings.Contains(status.Status().Message, tc.wantField) {
				t.Errorf("create: %v, want a 422 naming %s", err, tc.wantField)
			}
		})
	}
}

// TestHostileTextOfEveryKind: bytes that are not UTF-8, which only a
// protobuf request can carry (JSON's decoder makes each one U+FFFD),
// wherever a client writes text (a container's argument, an env value, an
// annotation), are refused with a 422 naming the field, on create and on
// update, for every kind; nothing is stored or changed.
func TestHostileTextOfEveryKind(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, hostileText[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList](s),
		hostileText[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList](s),
		hostileText[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList](s),
		hostileText[*v1beta1.GenericJob, *v1beta1.GenericJobList](s),
		hostileText[*v1beta1.MPIJob, *v1beta1.MPIJobList](s))
}

func hostileText[J jobPointer, L any](s *framework.TestServer) func(*testing.T, kind[J, L]) {
	return func(t *testing.T, k kind[J, L]) {
		ctx := context.Background()
		const namespace, notText = "hostile-text", "train\xff\xfe.py"
		rc := protobufClient(t, s)
		refused := func(t *testing.T, err error, field string) {
			t.Helper()
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("%v, want a 422 naming %s", err, field)
			}
			got := status.Status()
			if got.Code != http.StatusUnprocessableEntity || got.Details == nil || len(got.Details.Causes) != 1 ||
				got.Details.Causes[0].Field != field || !strings.Contains(got.Message, "UTF-8") {
				t.Errorf("%d %q (causes %+v), want a 422 naming %s alone", got.Code, got.Message, got.Details, field)
			}
		}
		create := func(job J) error {
			return rc.Post().Namespace(namespace).Resource(k.resource).Body(job).Do(ctx).Error()
		}
		container := func(job J) *corev1.Container {
			return &job.CommonSpec().ReplicaSpecs[0].Template.Spec.Containers[0]
		}

		job := k.newJob("argument")
		container(job).Command = []string{"python", notText}
		refused(t, create(job), "spec.replicaSpecs[0].template.spec.containers[0].command[1]")
		job = k.newJob("annotation")
		job.SetAnnotations(map[string]string{"team": notText})
		refused(t, create(job), "metadata.annotations[team]")
		for _, name := range []string{"argument", "annotation"} {
			if _, err := k.client(namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("job %s after the refusal: %v, want NotFound", name, err)
			}
		}

		stored, err := k.client(namespace).Create(ctx, k.newJob("update"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		container(stored).Env = append(container(stored).Env, corev1.EnvVar{Name: "DATA", Value: notText})
		err = rc.Put().Namespace(namespace).Resource(k.resource).Name("update").Body(stored).Do(ctx).Error()
		refused(t, err, fmt.Sprintf("spec.replicaSpecs[0].template.spec.containers[0].env[%d].value", len(container(stored).Env)-1))
		got, err := k.client(namespace).Get(ctx, "update", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, env := range container(got).Env {
			if env.Name == "DATA" {
				t.Errorf("the refused update was stored: env %+v", env)
			}
		}
	}
}

// TestLongestNamesOfEveryKind: a job whose name and namespace are at the
// 63-character limit is accepted for every kind, and every name the
// controller derives from them fits its own limit: the pods' names,
// hostnames and subdomain (the headless Service), the Secrets and
// ConfigMaps they mount (an MPI job's key pair), and the hostnames the
// launcher's hostfile lists. One character more is refused, naming
// metadata.name.
func TestLongestNamesOfEveryKind(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, longestNames[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList],
		longestNames[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList],
		longestNames[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList],
		longestNames[*v1beta1.GenericJob, *v1beta1.GenericJobList],
		longestNames[*v1beta1.MPIJob, *v1beta1.MPIJobList])
}

func longestNames[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	namespace := strings.Repeat("n", utilvalidation.DNS1123LabelMaxLength)
	name := "j" + strings.Repeat("0", utilvalidation.DNS1035LabelMaxLength-1)
	_, err := k.client(namespace).Create(ctx, k.newJob(name+"1"), metav1.CreateOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusUnprocessableEntity ||
		status.Status().Details == nil || len(status.Status().Details.Causes) == 0 ||
		status.Status().Details.Causes[0].Field != "metadata.name" {
		t.Errorf("a 64-character name: %v, want a 422 naming metadata.name", err)
	}

	job := k.newJob(name)
	for i, spec := range job.CommonSpec().ReplicaSpecs {
		if spec.Type == v1beta1.ReplicaTypeWorker {
			job.CommonSpec().ReplicaSpecs[i].Replicas = ptr.To[int32](100)
		}
	}
	created, err := k.client(namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a job named at the limit: %v", err)
	}
	adapter, err := podbuilder.AdapterFor(created)
	if err != nil {
		t.Fatal(err)
	}
	b := &podbuilder.Builder{Adapter: adapter, Job: created, Topology: podbuilder.NewTopology(adapter, created, "cluster.local")}
	addresses := 0
	for _, spec := range created.CommonSpec().ReplicaSpecs {
		last := podbuilder.ReplicaID{Type: spec.Type, Index: *spec.Replicas - 1}
		pod, err := b.Pod(last)
		if err != nil {
			t.Fatalf("building the pod of %s-%d: %v", last.Type, last.Index, err)
		}
		check := func(what, value string, rule func(string) []string) {
			t.Helper()
			if msgs := rule(value); len(msgs) > 0 {
				t.Errorf("%s of %s-%d, %q: %v", what, last.Type, last.Index, value, msgs)
			}
		}
		check("the pod's name", pod.Name, utilvalidation.IsDNS1123Subdomain)
		check("the hostname", pod.Spec.Hostname, utilvalidation.IsDNS1123Label)
		check("the subdomain (the Service)", pod.Spec.Subdomain, utilvalidation.IsDNS1035Label)
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil {
				check("a Secret it mounts", v.Secret.SecretName, utilvalidation.IsDNS1123Subdomain)
			}
			if v.ConfigMap != nil {
				check("a ConfigMap it mounts", v.ConfigMap.Name, utilvalidation.IsDNS1123Subdomain)
			}
		}
		// The addresses in its environment and arguments (MASTER_ADDR) and
		// in the job's cluster ConfigMap it refers to (TF_CONFIG's cluster,
		// the hostfile) are host names within the cluster.
		published, err := b.ClusterConfigMap()
		if err != nil {
			t.Fatalf("the job's cluster config map: %v", err)
		}
		var words []string
		if published != nil {
			check("the cluster config map", published.Name, utilvalidation.IsDNS1123Subdomain)
			for _, v := range published.Data {
				words = append(words, v)
			}
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			words = append(append(words, c.Command...), c.Args...)
			for _, e := range c.Env {
				words = append(words, e.Value)
			}
		}
		for _, word := range words {
			for _, host := range clusterHostnames(word, namespace) {
				check("an address it is given", host, utilvalidation.IsDNS1123Subdomain)
				addresses++
			}
		}
	}
	if addresses == 0 {
		t.Error("no pod was given an address of the job's replicas: the check saw none")
	}
}

// clusterHostnames picks the names of the form <...>.<namespace>.svc<...>
// out of a text (an argument, a variable, a hostfile).
func clusterHostnames(text, namespace string) []string {
	var hosts []string
	for _, field := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '.' || r == '-' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'))
	}) {
		if strings.Contains(field, "."+namespace+".svc") {
			hosts = append(hosts, strings.TrimSuffix(field, "."))
		}
	}
	return hosts
}
