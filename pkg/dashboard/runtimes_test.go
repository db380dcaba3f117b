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

package dashboard

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
)

// pyTorchTemplate is a runtime's template that makes PyTorchTrainingJobs of
// a master and a worker on image.
func pyTorchTemplate(image string) v1beta1.TrainingJobTemplate {
	pod := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: image}}}}
	return v1beta1.TrainingJobTemplate{Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
		ReplicaSpecs: []v1beta1.ReplicaSpec{
			{Type: "master", Replicas: ptr.To[int32](1), Template: pod},
			{Type: "worker", Replicas: ptr.To[int32](1), Template: pod},
		},
	}}}
}

func newClusterRuntime(name string, template v1beta1.TrainingJobTemplate) *v1beta1.ClusterTrainingRuntime {
	return &v1beta1.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.TrainingRuntimeSpec{Template: template}}
}

func newTrainingRuntime(namespace, name string, template v1beta1.TrainingJobTemplate) *v1beta1.TrainingRuntime {
	return &v1beta1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: v1beta1.TrainingRuntimeSpec{Template: template}}
}

func TestRuntimesListsTheNamespacesThenTheClusters(t *testing.T) {
	f := newFixture(t,
		newClusterRuntime("torch-distributed", pyTorchTemplate("registry.example/torch:2")),
		newClusterRuntime("generic", v1beta1.TrainingJobTemplate{Generic: &v1beta1.GenericJobSpec{}}),
		newTrainingRuntime("team", "team-torch", pyTorchTemplate("registry.example/team:1")),
		newTrainingRuntime("other", "other-torch", pyTorchTemplate("registry.example/other:1")),
	)
	f.signIn()

	var got runtimesView
	f.decode(f.do(http.MethodGet, f.url("/api/runtimes"), "", nil), http.StatusOK, &got)
	want := runtimesView{Namespace: "team", Items: []runtimeView{
		{Name: "team-torch", Scope: "Namespace", Namespace: "team", RuntimeKind: "TrainingRuntime", Kind: "PyTorchTrainingJob",
			Resource: "pytorchtrainingjobs", Image: "registry.example/team:1", ReplicaTypes: []string{"master", "worker"}},
		{Name: "generic", Scope: "Cluster", RuntimeKind: "ClusterTrainingRuntime", Kind: "GenericJob",
			Resource: "genericjobs", ReplicaTypes: []string{}},
		{Name: "torch-distributed", Scope: "Cluster", RuntimeKind: "ClusterTrainingRuntime", Kind: "PyTorchTrainingJob",
			Resource: "pytorchtrainingjobs", Image: "registry.example/torch:2", ReplicaTypes: []string{"master", "worker"}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GET /api/runtimes:\n got %+v\nwant %+v", got, want)
	}

	// The query's namespace, not the user's.
	f.decode(f.do(http.MethodGet, f.url("/api/runtimes?namespace=other"), "", nil), http.StatusOK, &got)
	if got.Namespace != "other" || len(got.Items) != 3 || got.Items[0].Name != "other-torch" || got.Items[0].Namespace != "other" {
		t.Errorf("GET /api/runtimes?namespace=other: %+v, want other-torch, then the cluster's two", got)
	}
}

func TestRuntimesLeaveOutAScopeTheUserMayNotList(t *testing.T) {
	refuse := func(resource string) clienttesting.ReactionFunc {
		return func(action clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: v1beta1.GroupName, Resource: resource}, "",
				errFromString(`User "viewer" cannot list resource "`+resource+`" in API group "batch.tensorstack.dev"`))
		}
	}
	tests := map[string]struct {
		refused   []string
		wantNames []string
	}{
		"the cluster's":   {refused: []string{"clustertrainingruntimes"}, wantNames: []string{"team-torch"}},
		"the namespace's": {refused: []string{"trainingruntimes"}, wantNames: []string{"torch-distributed"}},
		"both":            {refused: []string{"trainingruntimes", "clustertrainingruntimes"}, wantNames: []string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t,
				newClusterRuntime("torch-distributed", pyTorchTemplate("registry.example/torch:2")),
				newTrainingRuntime("team", "team-torch", pyTorchTemplate("registry.example/team:1")),
			)
			for _, resource := range tc.refused {
				f.training.PrependReactor("list", resource, refuse(resource))
			}
			f.signIn()

			var got runtimesView
			f.decode(f.do(http.MethodGet, f.url("/api/runtimes"), "", nil), http.StatusOK, &got)
			names := []string{}
			for _, item := range got.Items {
				names = append(names, item.Name)
			}
			if !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("runtimes %v, want %v", names, tc.wantNames)
			}
			if !reflect.DeepEqual(got.Forbidden, tc.refused) {
				t.Errorf("forbidden %v, want %v", got.Forbidden, tc.refused)
			}
			if len(got.Refused) != len(tc.refused) {
				t.Fatalf("refused %+v, want the API's %d refusals", got.Refused, len(tc.refused))
			}
			for i, status := range got.Refused {
				if status.Code != http.StatusForbidden || !strings.Contains(status.Message, `cannot list resource "`+tc.refused[i]+`"`) {
					t.Errorf("refusal %d: %+v, want the API's 403 for %s", i, status, tc.refused[i])
				}
			}
		})
	}
}

// In the cluster, the runtimes are listed with the signed-in user's token,
// never the dashboard's own credentials.
func TestInClusterRuntimesAreListedAsTheUser(t *testing.T) {
	dashboard, client, api, _ := inClusterFixture(t)
	if resp, body := send(t, client, http.MethodPost, dashboard.URL+"/api/signin", `{"token":"alice-token"}`, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	before := len(api.seen())
	resp, body := send(t, client, http.MethodGet, dashboard.URL+"/api/runtimes", "", nil)
	var got runtimesView
	if err := json.Unmarshal([]byte(body), &got); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET /api/runtimes: %d %s", resp.StatusCode, body)
	}
	if got.Namespace != "team" || len(got.Items) != 1 || got.Items[0].Name != "torch-distributed" || got.Items[0].Kind != "PyTorchTrainingJob" {
		t.Errorf("runtimes %+v, want the cluster's torch-distributed", got)
	}
	seen := api.seen()[before:]
	if len(seen) != 2 {
		t.Fatalf("%d requests reached the API, want the two lists", len(seen))
	}
	for _, authorization := range seen {
		if authorization != "Bearer alice-token" {
			t.Errorf("a list reached the API with %q, want alice's token", authorization)
		}
	}
}

func TestRuntimesPassOtherErrorsThrough(t *testing.T) {
	f := newFixture(t)
	f.training.PrependReactor("list", "clustertrainingruntimes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is not answering")
	})
	f.signIn()
	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/runtimes"), "", nil), http.StatusServiceUnavailable, &body)
	if !strings.Contains(body.Status.Message, "etcd is not answering") {
		t.Errorf("status %+v, want the API's 503", body.Status)
	}
}

// Every kind of the table is read from a runtime's template, with no kind
// named in the dashboard: a template holding a kind's field makes that kind.
func TestViewRuntimeKnowsEveryKind(t *testing.T) {
	fields := batch.TemplateKinds()
	for _, kind := range jobclient.Kinds {
		field, ok := fields[kind.Name]
		if !ok {
			t.Errorf("no template field makes %s", kind.Name)
			continue
		}
		raw := `{"` + field + `": {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "img:1"}]}}}]}}`
		var template v1beta1.TrainingJobTemplate
		if err := json.Unmarshal([]byte(raw), &template); err != nil {
			t.Fatal(err)
		}
		got := viewRuntime("r", scopeCluster, "", batch.ClusterTrainingRuntimeKind, &template)
		if got.Kind != kind.Name || got.Resource != kind.Resource || got.Image != "img:1" || !reflect.DeepEqual(got.ReplicaTypes, []string{"worker"}) {
			t.Errorf("the template %s: %+v, want a %s of one worker on img:1", raw, got, kind.Name)
		}
	}

	// A kind the dashboard does not know was dropped when the runtime was
	// decoded: the template holds none.
	got := viewRuntime("newer", scopeCluster, "", batch.ClusterTrainingRuntimeKind, &v1beta1.TrainingJobTemplate{})
	if got.Kind != "" || got.Resource != "" || got.ReplicaTypes == nil {
		t.Errorf("an empty template: %+v, want no kind and no replica types", got)
	}
}

// formJob is the job the page's form posts for a runtime: JSON, which the
// create reads as it reads YAML.
const formJob = `{"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJob",
 "metadata": {"name": "mnist", "namespace": "research"},
 "spec": {"runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
  "trainer": {"command": ["python3", "train.py", "--note", "a b"], "env": [{"name": "LR", "value": "0.01"}], "numNodes": 2,
   "resourcesPerNode": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}}}}}`

func TestCreateTakesTheFormsJob(t *testing.T) {
	f := newFixture(t)
	f.signIn()
	var created jobSummary
	f.decode(f.act(http.MethodPost, "/api/jobs", formJob), http.StatusCreated, &created)
	if created.Namespace != "research" || created.Name != "mnist" || created.Resource != v1beta1.PyTorchTrainingJobResource {
		t.Errorf("created %+v, want pytorchtrainingjobs research/mnist", created)
	}
	obj, err := f.training.Tracker().Get(pyTorchResource, "research", "mnist")
	if err != nil {
		t.Fatalf("the job is not in the API: %v", err)
	}
	spec := obj.(*v1beta1.PyTorchTrainingJob).Spec
	if spec.RuntimeRef == nil || *spec.RuntimeRef != (v1beta1.RuntimeRef{Name: "torch-distributed", Kind: "ClusterTrainingRuntime"}) {
		t.Errorf("runtimeRef %+v, want ClusterTrainingRuntime torch-distributed", spec.RuntimeRef)
	}
	trainer := spec.Trainer
	if trainer == nil || strings.Join(trainer.Command, "|") != "python3|train.py|--note|a b" || ptr.Deref(trainer.NumNodes, 0) != 2 ||
		len(trainer.Env) != 1 || trainer.Env[0] != (corev1.EnvVar{Name: "LR", Value: "0.01"}) {
		t.Fatalf("trainer %+v, want the form's", trainer)
	}
	limits := trainer.ResourcesPerNode.Limits
	if gpu := limits["nvidia.com/gpu"]; gpu.Cmp(resource.MustParse("1")) != 0 || trainer.ResourcesPerNode.Requests.Memory().String() != "2Gi" {
		t.Errorf("resources per node %+v, want the form's", trainer.ResourcesPerNode)
	}
}

func TestCreatePassesTheTrainersRefusalThrough(t *testing.T) {
	f := newFixture(t)
	f.training.PrependReactor("create", "pytorchtrainingjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(v1beta1.SchemeGroupVersion.WithKind("PyTorchTrainingJob").GroupKind(), "mnist",
			field.ErrorList{field.Invalid(field.NewPath("spec", "trainer", "numNodes"), 0, "must be between 1 and 1000")})
	})
	f.signIn()
	var body errorBody
	f.decode(f.act(http.MethodPost, "/api/jobs", strings.Replace(formJob, `"numNodes": 2`, `"numNodes": 0`, 1)),
		http.StatusUnprocessableEntity, &body)
	if body.Status.Details == nil || len(body.Status.Details.Causes) != 1 || body.Status.Details.Causes[0].Field != "spec.trainer.numNodes" {
		t.Errorf("status %+v, want the one cause at spec.trainer.numNodes", body.Status)
	}
}
