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
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

var pyTorchResource = v1beta1.SchemeGroupVersion.WithResource(v1beta1.PyTorchTrainingJobResource)

func TestActionPassesTheAPIRefusalThrough(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	forbidden := apierrors.NewForbidden(
		schema.GroupResource{Group: v1beta1.GroupName, Resource: "pytorchtrainingjobs/pause"}, "mnist",
		// As RBAC words it.
		errFromString(`User "viewer" cannot create resource "pytorchtrainingjobs/pause" in API group "batch.tensorstack.dev" in the namespace "team"`))
	f.training.PrependReactor("create", "pytorchtrainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return action.GetSubresource() == "pause", nil, forbidden
	})
	f.signIn()

	var body errorBody
	f.decode(f.act(http.MethodPost, "/api/namespaces/team/pytorchtrainingjobs/mnist/pause", "{}"), http.StatusForbidden, &body)
	if body.Status.Code != http.StatusForbidden || body.Status.Reason != metav1.StatusReasonForbidden {
		t.Errorf("status %+v, want the API's 403 Forbidden", body.Status)
	}
	if !strings.Contains(body.Status.Message, `cannot create resource "pytorchtrainingjobs/pause"`) {
		t.Errorf("message %q does not name the refused verb and resource", body.Status.Message)
	}
}

func TestCreatePassesTheAPIValidationThrough(t *testing.T) {
	f := newFixture(t)
	invalid := apierrors.NewInvalid(
		v1beta1.SchemeGroupVersion.WithKind("PyTorchTrainingJob").GroupKind(), "mnist",
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicaSpecs").Index(0).Child("replicas"), -1, "must be greater than or equal to 0")})
	var createdIn string
	f.training.PrependReactor("create", "pytorchtrainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		createdIn = action.GetNamespace()
		return true, nil, invalid
	})
	f.signIn()

	manifest := `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: mnist
spec:
  replicaSpecs:
  - type: worker
    replicas: -1
`
	var body errorBody
	f.decode(f.act(http.MethodPost, "/api/jobs", manifest), http.StatusUnprocessableEntity, &body)
	if createdIn != "team" {
		t.Errorf("created in namespace %q, want the user's, team", createdIn)
	}
	if body.Status.Details == nil || len(body.Status.Details.Causes) != 1 || body.Status.Details.Causes[0].Field != "spec.replicaSpecs[0].replicas" {
		t.Errorf("status %+v, want the one cause at spec.replicaSpecs[0].replicas", body.Status)
	}
	if !strings.Contains(body.Status.Message, "spec.replicaSpecs[0].replicas") {
		t.Errorf("message %q does not name the field", body.Status.Message)
	}
}

func TestCreateRefusesManifestsItCannotRead(t *testing.T) {
	tests := map[string]struct {
		manifest    string
		wantMessage string
	}{
		"empty": {"", "empty"},
		"another group": {
			"apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n", `apiVersion: "batch/v1"`,
		},
		"another kind": {
			"apiVersion: batch.tensorstack.dev/v1beta1\nkind: RayJob\nmetadata: {name: x}\n", `kind: "RayJob"`,
		},
		"a misspelt field": {
			"apiVersion: batch.tensorstack.dev/v1beta1\nkind: PyTorchTrainingJob\nmetadata: {name: x}\nspec: {replicaSpec: []}\n", `unknown field "spec.replicaSpec"`,
		},
		"two documents": {
			"apiVersion: batch.tensorstack.dev/v1beta1\nkind: PyTorchTrainingJob\nmetadata: {name: x}\n---\n" +
				"apiVersion: batch.tensorstack.dev/v1beta1\nkind: PyTorchTrainingJob\nmetadata: {name: y}\n", "more than one document",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.signIn()
			var body errorBody
			f.decode(f.act(http.MethodPost, "/api/jobs", tc.manifest), http.StatusBadRequest, &body)
			if !strings.Contains(body.Status.Message, tc.wantMessage) {
				t.Errorf("message %q, want it to say %q", body.Status.Message, tc.wantMessage)
			}
			if hasAction(f, "create", "") {
				t.Error("the manifest reached the API")
			}
		})
	}
}

func TestCreateCreatesInTheManifestsNamespace(t *testing.T) {
	f := newFixture(t)
	f.signIn()
	manifest := "apiVersion: batch.tensorstack.dev/v1beta1\nkind: PyTorchTrainingJob\nmetadata: {name: mnist, namespace: research}\n"
	var created jobSummary
	f.decode(f.act(http.MethodPost, "/api/jobs", manifest), http.StatusCreated, &created)
	if created.Namespace != "research" || created.Name != "mnist" || created.Resource != v1beta1.PyTorchTrainingJobResource {
		t.Errorf("created %+v, want pytorchtrainingjobs research/mnist", created)
	}
	if _, err := f.training.Tracker().Get(pyTorchResource, "research", "mnist"); err != nil {
		t.Errorf("the job is not in the API: %v", err)
	}
}

type errFromString string

func (e errFromString) Error() string { return string(e) }

func TestDebugSendsTheRequestedCommands(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	var sent *v1beta1.DebugRequest
	f.training.PrependReactor("create", "pytorchtrainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "debug" {
			return false, nil, nil
		}
		sent = action.(clienttesting.CreateAction).GetObject().(*v1beta1.DebugRequest)
		job := newPyTorchJob("team", "mnist")
		job.Spec.RunMode = &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enabled: true}}
		return true, job, nil
	})
	f.signIn()

	var summary jobSummary
	f.decode(f.act(http.MethodPost, "/api/namespaces/team/pytorchtrainingjobs/mnist/debug",
		`{"replicaSpecs":[{"type":"worker","command":["sleep","600"]}]}`), http.StatusOK, &summary)
	if sent == nil || len(sent.ReplicaSpecs) != 1 || sent.ReplicaSpecs[0].Type != "worker" ||
		strings.Join(sent.ReplicaSpecs[0].Command, " ") != "sleep 600" {
		t.Errorf("debug request sent %+v, want the body's", sent)
	}
	if summary.Name != "mnist" {
		t.Errorf("answer %+v, want the job", summary)
	}

	// No body: every replica type with the API's default command.
	sent = nil
	f.decode(f.act(http.MethodPost, "/api/namespaces/team/pytorchtrainingjobs/mnist/debug", ""), http.StatusOK, &summary)
	if sent == nil || len(sent.ReplicaSpecs) != 0 {
		t.Errorf("debug request sent %+v, want an empty one", sent)
	}

	var body errorBody
	f.decode(f.act(http.MethodPost, "/api/namespaces/team/pytorchtrainingjobs/mnist/debug", `{"replicas":[]}`),
		http.StatusBadRequest, &body)
	if !strings.Contains(body.Status.Message, "replicas") {
		t.Errorf("an unknown field: %q, want it named", body.Status.Message)
	}
}

func TestScaleNeedsReplicas(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	f.signIn()
	for body, want := range map[string]string{
		"":                   "replicas: required",
		`{}`:                 "replicas: required",
		`{"replicas":"two"}`: "reading the scale request",
		`{"replica":2}`:      "reading the scale request",
	} {
		var refused errorBody
		f.decode(f.act(http.MethodPost, "/api/namespaces/team/pytorchtrainingjobs/mnist/scale", body), http.StatusBadRequest, &refused)
		if !strings.Contains(refused.Status.Message, want) {
			t.Errorf("body %q: %q, want %q", body, refused.Status.Message, want)
		}
	}
}
