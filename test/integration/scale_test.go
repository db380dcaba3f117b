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
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// TestScaleSubresource: an elastic PyTorch job's scale subresource reads and
// sets expectedReplicas, as kubectl scale and an autoscaler use it; counts
// outside [minReplicas, maxReplicas] and jobs that are not elastic get 422
// naming the field.
func TestScaleSubresource(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	pt := pytorchKind(s)
	rc := restClient(t, s)
	const ns = "scale"

	elastic := pt.newJob("elastic", v1beta1.ReplicaTypeWorker)
	elastic.Spec.TorchrunConfig = &v1beta1.TorchrunConfig{Enabled: true}
	elastic.Spec.Elastic = &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4),
		ExpectedReplicas: ptr.To[int32](2)}
	if _, err := pt.client(ns).Create(ctx, elastic, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixed := pt.newJob("fixed")
	if _, err := pt.client(ns).Create(ctx, fixed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	scalePath := func(name string) string {
		return "/apis/batch.tensorstack.dev/v1beta1/namespaces/" + ns + "/pytorchtrainingjobs/" + name + "/scale"
	}
	get := func(name string) *autoscalingv1.Scale {
		t.Helper()
		scale := &autoscalingv1.Scale{}
		if err := rc.Get().AbsPath(scalePath(name)).Do(ctx).Into(scale); err != nil {
			t.Fatalf("get the scale of %s: %v", name, err)
		}
		return scale
	}
	scale := get("elastic")
	if scale.Spec.Replicas != 2 || !strings.Contains(scale.Status.Selector, v1beta1.LabelJobName+"=elastic") {
		t.Errorf("scale %+v, want spec.replicas 2 and the job's selector", scale)
	}

	// As kubectl scale does it: a merge patch of spec.replicas.
	patch := func(name, body string) error {
		return rc.Patch(types.MergePatchType).AbsPath(scalePath(name)).Body([]byte(body)).Do(ctx).Error()
	}
	if err := patch("elastic", `{"spec":{"replicas":4}}`); err != nil {
		t.Fatalf("scale to 4: %v", err)
	}
	job, err := pt.client(ns).Get(ctx, "elastic", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := job.Spec.Elastic.ExpectedReplicas; e == nil || *e != 4 {
		t.Errorf("expectedReplicas %v after scaling to 4", e)
	}
	if job.Generation != 2 {
		t.Errorf("generation %d after scaling, want 2: the spec changed", job.Generation)
	}
	var scaledBy string
	for _, m := range job.ManagedFields {
		if m.Subresource == "scale" {
			scaledBy = m.Manager
		}
	}
	if scaledBy == "" {
		t.Errorf("managedFields %+v, want an entry of the scale subresource", job.ManagedFields)
	}
	// As an autoscaler does it: an update of the whole scale.
	scale = get("elastic")
	scale.Spec.Replicas = 3
	if err := rc.Put().AbsPath(scalePath("elastic")).Body(scale).Do(ctx).Error(); err != nil {
		t.Fatalf("update the scale to 3: %v", err)
	}
	if got := get("elastic").Spec.Replicas; got != 3 {
		t.Errorf("spec.replicas %d after the update, want 3", got)
	}

	for _, tc := range []struct {
		name, job, body, field string
	}{
		{"above maxReplicas", "elastic", `{"spec":{"replicas":5}}`, "spec.elastic.expectedReplicas"},
		{"below minReplicas", "elastic", `{"spec":{"replicas":0}}`, "spec.elastic.expectedReplicas"},
		{"not elastic", "fixed", `{"spec":{"replicas":3}}`, "spec.elastic.enabled"},
	} {
		err := patch(tc.job, tc.body)
		status, ok := err.(apierrors.APIStatus)
		if !apierrors.IsInvalid(err) || !ok || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 ||
			status.Status().Details.Causes[0].Field != tc.field {
			t.Errorf("%s: %v, want 422 naming %s", tc.name, err, tc.field)
		}
	}

	resources, err := discovery.NewDiscoveryClientForConfigOrDie(s.Config).ServerResourcesForGroupVersion(v1beta1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range resources.APIResources {
		if r.Name == "pytorchtrainingjobs/scale" {
			found = true
			if r.Group != "autoscaling" || r.Version != "v1" || r.Kind != "Scale" ||
				!contains(r.Verbs, "get") || !contains(r.Verbs, "update") || !contains(r.Verbs, "patch") {
				t.Errorf("pytorchtrainingjobs/scale discovered as %+v, want autoscaling/v1 Scale with get, update, patch", r)
			}
		}
		for _, fixedKind := range []string{v1beta1.TensorFlowTrainingJobResource, v1beta1.XGBoostTrainingJobResource, v1beta1.MPIJobResource} {
			if r.Name == fixedKind+"/scale" {
				t.Errorf("%s/scale is served; only PyTorch jobs and GenericJobs may be elastic", fixedKind)
			}
		}
	}
	if !found {
		t.Errorf("pytorchtrainingjobs/scale not discovered")
	}
}

// TestGenericJobScale: a GenericJob may opt in to elasticity; its scale
// subresource then sets expectedReplicas as a PyTorch job's does, and its
// rules may name the scaled type only whole.
func TestGenericJobScale(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	rc := restClient(t, s)
	const ns = "generic-scale"
	client := s.Client.BatchV1beta1().GenericJobs(ns)
	newJob := func(name string, elastic *v1beta1.ElasticConfig) *v1beta1.GenericJob {
		job := &v1beta1.GenericJob{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, typ := range []v1beta1.ReplicaType{"coordinator", "worker"} {
			job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{Type: typ, Replicas: ptr.To[int32](1),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trainer:1"}}}}})
		}
		job.Spec.Elastic = elastic
		return job
	}
	elastic := newJob("elastic", &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](5)})
	if _, err := client.Create(ctx, elastic, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Create(ctx, newJob("fixed", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scalePath := func(name string) string {
		return "/apis/batch.tensorstack.dev/v1beta1/namespaces/" + ns + "/genericjobs/" + name + "/scale"
	}
	patch := func(name, body string) error {
		return rc.Patch(types.MergePatchType).AbsPath(scalePath(name)).Body([]byte(body)).Do(ctx).Error()
	}
	if err := patch("elastic", `{"spec":{"replicas":4}}`); err != nil {
		t.Fatalf("scale to 4: %v", err)
	}
	job, err := client.Get(ctx, "elastic", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := job.Spec.Elastic.ExpectedReplicas; e == nil || *e != 4 {
		t.Errorf("expectedReplicas %v after scaling to 4", e)
	}
	scale := &autoscalingv1.Scale{}
	if err := rc.Get().AbsPath(scalePath("elastic")).Do(ctx).Into(scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 4 || !strings.Contains(scale.Status.Selector, v1beta1.LabelJobKind+"=GenericJob") {
		t.Errorf("scale %+v, want spec.replicas 4 and the GenericJob's selector", scale)
	}

	byIndex := newJob("by-index", &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](5)})
	byIndex.Spec.SuccessRules = []v1beta1.ReplicaRule{{Replicas: []v1beta1.ReplicaSelector{{Type: "worker", Indexes: []int32{0}}}}}
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"above maxReplicas", patch("elastic", `{"spec":{"replicas":6}}`), "spec.elastic.expectedReplicas"},
		{"not elastic", patch("fixed", `{"spec":{"replicas":3}}`), "spec.elastic.enabled"},
		{"a rule naming an index of the scaled type", func() error {
			_, err := client.Create(ctx, byIndex, metav1.CreateOptions{})
			return err
		}(), "spec.successRules[0].replicas[0].indexes"},
	} {
		status, ok := tc.err.(apierrors.APIStatus)
		if !apierrors.IsInvalid(tc.err) || !ok || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 ||
			status.Status().Details.Causes[0].Field != tc.field {
			t.Errorf("%s: %v, want 422 naming %s", tc.name, tc.err, tc.field)
		}
	}
}
