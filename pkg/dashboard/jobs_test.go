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
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// detailView is the job page's detail as the page reads it.
type detailView struct {
	Job struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	} `json:"job"`
	YAML        string    `json:"yaml"`
	Pods        []podView `json:"pods"`
	PodsRefused *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"podsRefused"`
	History *struct {
		Samples []struct {
			Step int64 `json:"step"`
		} `json:"samples"`
	} `json:"history"`
	HistoryRefused *struct {
		Code int `json:"code"`
	} `json:"historyRefused"`
}

func TestJobDetail(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	for _, pod := range []runtime.Object{replicaPod("team", "mnist-master-0", "mnist"), replicaPod("team", "other-master-0", "other")} {
		if err := f.kube.Tracker().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	f.signIn()

	var detail detailView
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/mnist"), "", nil), http.StatusOK, &detail)
	if detail.Job.Kind != "PyTorchTrainingJob" || detail.Job.APIVersion != "batch.tensorstack.dev/v1beta1" {
		t.Errorf("job of kind %q %q, want the full kind the typed client leaves out", detail.Job.APIVersion, detail.Job.Kind)
	}
	if !strings.Contains(detail.YAML, "kind: PyTorchTrainingJob") || strings.Contains(detail.YAML, "status:") {
		t.Errorf("YAML %q: want the kind and no status", detail.YAML)
	}
	if len(detail.Pods) != 1 || detail.Pods[0].Name != "mnist-master-0" {
		t.Errorf("pods %+v, want the job's one pod", detail.Pods)
	}
}

func TestJobDetailShowsThePodsTheUserMayNotList(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	f.kube.PrependReactor("list", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(action.GetResource().GroupResource(), "", errFromString(`User "viewer" cannot list resource "pods"`))
	})
	f.signIn()

	var detail detailView
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/mnist"), "", nil), http.StatusOK, &detail)
	if detail.PodsRefused == nil || detail.PodsRefused.Code != http.StatusForbidden || !strings.Contains(detail.PodsRefused.Message, `cannot list resource "pods"`) {
		t.Errorf("podsRefused %+v, want the API's 403", detail.PodsRefused)
	}
	if detail.Job.Kind != "PyTorchTrainingJob" {
		t.Error("the job is missing: a refused pod list must not fail the page")
	}
}

// TestJobDetailHistory: the detail carries the job's progress history when
// the page asks for it, and a refused history is said, not a failed page.
func TestJobDetailHistory(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	refuse := false
	f.training.PrependReactor("get", "pytorchtrainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "progresshistory" {
			return false, nil, nil
		}
		if refuse {
			return true, nil, apierrors.NewForbidden(action.GetResource().GroupResource(), "mnist", errFromString("no"))
		}
		step := int64(7)
		return true, &v1beta1.ProgressHistory{Samples: []v1beta1.ProgressSample{{Step: &step}}}, nil
	})
	f.signIn()

	var plain, withHistory, refused detailView
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/mnist"), "", nil), http.StatusOK, &plain)
	if plain.History != nil {
		t.Errorf("history %+v in a detail that did not ask for it", plain.History)
	}
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/mnist?history=true"), "", nil), http.StatusOK, &withHistory)
	if withHistory.History == nil || len(withHistory.History.Samples) != 1 || withHistory.History.Samples[0].Step != 7 {
		t.Errorf("history %+v, want the one sample of step 7", withHistory.History)
	}
	refuse = true
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/mnist?history=true"), "", nil), http.StatusOK, &refused)
	if refused.History != nil || refused.HistoryRefused == nil || refused.HistoryRefused.Code != http.StatusForbidden {
		t.Errorf("history %+v, refused %+v: want the API's 403 and no history", refused.History, refused.HistoryRefused)
	}
	if refused.Job.Kind != "PyTorchTrainingJob" {
		t.Error("the job is missing: a refused history must not fail the page")
	}
}

// TestJobProgressHistory: the comparison's read of a job is the job and its
// history, and lists none of its pods or events.
func TestJobProgressHistory(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	f.training.PrependReactor("get", "pytorchtrainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "progresshistory" {
			return false, nil, nil
		}
		step := int64(9)
		return true, &v1beta1.ProgressHistory{Samples: []v1beta1.ProgressSample{{Step: &step}}}, nil
	})
	f.signIn()
	f.kube.ClearActions()

	var got detailView
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/mnist/history"), "", nil), http.StatusOK, &got)
	if got.Job.Kind != "PyTorchTrainingJob" {
		t.Errorf("job of kind %q, want PyTorchTrainingJob", got.Job.Kind)
	}
	if got.History == nil || len(got.History.Samples) != 1 || got.History.Samples[0].Step != 9 {
		t.Errorf("history %+v, want the one sample of step 9", got.History)
	}
	if got.YAML != "" || got.Pods != nil {
		t.Errorf("YAML %q and pods %+v in the history's answer, want neither", got.YAML, got.Pods)
	}
	for _, action := range f.kube.Actions() {
		if action.GetVerb() == "list" {
			t.Errorf("reading the history listed %s", action.GetResource().Resource)
		}
	}
	var missing errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/pytorchtrainingjobs/absent/history"), "", nil), http.StatusNotFound, &missing)
}

func TestUnknownResourceIsNotFound(t *testing.T) {
	f := newFixture(t)
	f.signIn()
	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/namespaces/team/rayjobs/mnist"), "", nil), http.StatusNotFound, &body)
	if !strings.Contains(body.Status.Message, `"rayjobs"`) {
		t.Errorf("message %q does not name the resource", body.Status.Message)
	}
}
