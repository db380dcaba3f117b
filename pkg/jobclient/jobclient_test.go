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

package jobclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
)

func TestKindsAreFoundByEveryName(t *testing.T) {
	for _, k := range Kinds {
		if got, ok := ByResource(k.Resource); !ok || got != k {
			t.Errorf("ByResource(%q) = %v, %v", k.Resource, got, ok)
		}
		if got, ok := ByKind(k.Name); !ok || got != k {
			t.Errorf("ByKind(%q) = %v, %v", k.Name, got, ok)
		}
		if got, err := Of(k.New()); err != nil || got != k {
			t.Errorf("Of(%T) = %v, %v", k.New(), got, err)
		}
		if k.Singular()+"s" != k.Resource {
			t.Errorf("%s: singular %q is not the resource %q less its s", k.Name, k.Singular(), k.Resource)
		}
	}
	if _, ok := ByResource("pods"); ok {
		t.Error("ByResource(pods) found a kind")
	}
	if _, err := Of(nil); err == nil {
		t.Error("Of(nil) found a kind")
	}
}

func TestWithKindSetsTheTypeOnACopy(t *testing.T) {
	job := &v1beta1.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	got := PyTorch.WithKind(job)
	if gvk := got.GetObjectKind().GroupVersionKind(); gvk != v1beta1.SchemeGroupVersion.WithKind("PyTorchTrainingJob") {
		t.Errorf("kind %v", gvk)
	}
	if job.Kind != "" {
		t.Error("WithKind changed the job it was given")
	}
}

// The adapter behind each kind reaches that kind's typed client, and refuses
// a job of another kind.
func TestClientsReachTheirKind(t *testing.T) {
	ctx := context.Background()
	c := fake.NewSimpleClientset()
	for _, k := range Kinds {
		job := k.New()
		job.SetName("job-" + k.ShortName)
		job.SetNamespace("ns")
		client := k.Client(c, "ns")
		if _, err := client.Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create: %v", k.Name, err)
		}
		got, err := client.Get(ctx, job.GetName())
		if err != nil || got.GetName() != job.GetName() {
			t.Errorf("%s: get: %v, %v", k.Name, got, err)
		}
		jobs, err := client.List(ctx, metav1.ListOptions{})
		if err != nil || len(jobs) != 1 {
			t.Errorf("%s: list: %d jobs, %v", k.Name, len(jobs), err)
		}
		if list, err := client.ListObject(ctx, metav1.ListOptions{}); err != nil || !strings.HasSuffix(strings.ToLower(strings.TrimPrefix(
			fmt.Sprintf("%T", list), "*v1beta1.")), "list") {
			t.Errorf("%s: list object %T, %v", k.Name, list, err)
		}
		got.SetLabels(map[string]string{"updated": "yes"})
		if updated, err := client.Update(ctx, got, metav1.UpdateOptions{}); err != nil || updated.GetLabels()["updated"] != "yes" {
			t.Errorf("%s: update: %v, %v", k.Name, updated, err)
		}
		if got, err := client.Get(ctx, job.GetName()); err != nil || got.GetLabels()["updated"] != "yes" {
			t.Errorf("%s: the update was not stored: %v, %v", k.Name, got, err)
		}
		if err := client.Delete(ctx, job.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("%s: delete: %v", k.Name, err)
		}
	}
	if _, err := TensorFlow.Client(c, "ns").Create(ctx, &v1beta1.PyTorchTrainingJob{}, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "cannot create") {
		t.Errorf("a PyTorch job through the TensorFlow client: %v, want a refusal", err)
	}
	if _, err := TensorFlow.Client(c, "ns").Update(ctx, &v1beta1.PyTorchTrainingJob{}, metav1.UpdateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "cannot update") {
		t.Errorf("a PyTorch job updated through the TensorFlow client: %v, want a refusal", err)
	}
}

// Scale patches the scale subresource, and hands the API's refusal back as
// an API error.
func TestScalePatchesTheScaleSubresource(t *testing.T) {
	var gotPath, gotType, gotBody string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		gotPath, gotType, gotBody = r.Method+" "+r.URL.Path, r.Header.Get("Content-Type"), string(body)
		w.Header().Set("Content-Type", "application/json")
		if refuse {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,`+
				`"message":"spec.replicas: Invalid value: 9: must be at most maxReplicas (4)"}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"a","namespace":"ns"},`+
			`"spec":{"replicas":3},"status":{"replicas":2,"selector":"x=y"}}`)
	}))
	defer srv.Close()
	c, err := versioned.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	// Every kind's client reaches its own scale subresource; the API
	// answers for a kind that serves none (404).
	for _, k := range Kinds {
		scale, err := k.Client(c, "ns").Scale(context.Background(), "a", 3)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if want := "PATCH /apis/batch.tensorstack.dev/v1beta1/namespaces/ns/" + k.Resource + "/a/scale"; gotPath != want {
			t.Errorf("%s: request %q, want %q", k.Name, gotPath, want)
		}
		if gotType != "application/merge-patch+json" || gotBody != `{"spec":{"replicas":3}}` {
			t.Errorf("%s: patch %s %s", k.Name, gotType, gotBody)
		}
		if scale.Spec.Replicas != 3 || scale.Status.Replicas != 2 || scale.Status.Selector != "x=y" {
			t.Errorf("%s: scale %+v", k.Name, scale)
		}
	}

	refuse = true
	if _, err := PyTorch.Client(c, "ns").Scale(context.Background(), "a", 9); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "maxReplicas") {
		t.Errorf("a refused scale: %v, want the API's 422", err)
	}
}

// TestKindsFollowTheTable: the clients' kinds are the rows of the table of
// kinds, in its order, with its names.
func TestKindsFollowTheTable(t *testing.T) {
	if len(Kinds) != len(batch.Kinds) {
		t.Fatalf("%d client kinds, %d rows in batch.Kinds", len(Kinds), len(batch.Kinds))
	}
	for i, row := range batch.Kinds {
		k := Kinds[i]
		if k.Name != row.Kind || k.Resource != row.Resource || k.ShortName != row.ShortName || k.TrainingContainer != row.TrainingContainer {
			t.Errorf("client kind %d is %+v, the table's row %+v", i, *k, row)
		}
		if got := reflect.TypeOf(k.New()).Elem().Name(); got != row.Kind {
			t.Errorf("%s: New makes a %s", row.Kind, got)
		}
	}
}
