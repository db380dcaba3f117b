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
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	applyv1beta1 "tensorstack.dev/training/pkg/generated/applyconfiguration/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// TestInvalidJobsRejected checks that bad input gets 422 naming the field.
func TestInvalidJobsRejected(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	tf, pt, xgb := tensorflowKind(s), pytorchKind(s), xgboostKind(s)

	cases := []struct {
		name      string
		create    func() error
		wantField string
	}{
		{"negative replicas", func() error {
			job := tf.newJob("negative")
			job.Spec.ReplicaSpecs[0].Replicas = ptr.To[int32](-1)
			_, err := tf.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs[0].replicas"},
		{"two XGBoost masters", func() error {
			job := xgb.newJob("masters")
			job.Spec.ReplicaSpecs[0].Replicas = ptr.To[int32](2)
			_, err := xgb.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs[0].replicas"},
		{"unknown XGBoost replica type", func() error {
			_, err := xgb.client("invalid").Create(ctx, xgb.newJob("launcher", "master", "launcher"), metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs[1].type"},
		{"XGBoost workers without a master", func() error {
			_, err := xgb.client("invalid").Create(ctx, xgb.newJob("nomaster", "worker"), metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs"},
		{"unknown TensorFlow replica type", func() error {
			_, err := tf.client("invalid").Create(ctx, tf.newJob("driver", "worker", "driver"), metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs[1].type"},
		{"duplicate replica type", func() error {
			_, err := pt.client("invalid").Create(ctx, pt.newJob("twice", "master", "worker", "worker"), metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs[2].type"},
		{"no containers", func() error {
			job := pt.newJob("empty")
			job.Spec.ReplicaSpecs[1].Template.Spec.Containers = nil
			_, err := pt.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "spec.replicaSpecs[1].template.spec.containers"},
		{"priority out of range", func() error {
			job := tf.newJob("priority")
			job.Spec.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: "default", Priority: 101}}
			_, err := tf.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "spec.scheduler.t9kScheduler.priority"},
		{"training log fileset not a t9k URL", func() error {
			job := tf.newJob("tensorboard")
			job.Spec.TensorboardSpec = &v1beta1.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: []string{"s3://bucket/logs"}}
			_, err := tf.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "spec.tensorboardSpec.trainingLogFilesets[0]"},
		{"static rendezvous for an elastic job", func() error {
			job := pt.newJob("elastic-static")
			job.Spec.TorchrunConfig = &v1beta1.TorchrunConfig{Enabled: true, RdzvBackend: v1beta1.RendezvousBackendStatic}
			job.Spec.Elastic = &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4)}
			_, err := pt.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "spec.torchrunConfig.rdzvBackend"},
		{"name too long for the derived TensorBoard name", func() error {
			job := tf.newJob(strings.Repeat("a", 55))
			job.Spec.TensorboardSpec = &v1beta1.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: []string{"t9k://pvc/logs/run1"}}
			_, err := tf.client("invalid").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, "metadata.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want 422 Invalid", err)
			}
			status := err.(apierrors.APIStatus).Status()
			var fields []string
			for _, cause := range status.Details.Causes {
				fields = append(fields, cause.Field)
				if cause.Field == tc.wantField {
					return
				}
			}
			t.Errorf("error names fields %v, want %s: %v", fields, tc.wantField, err)
		})
	}

	t.Run("replica types cannot change", func(t *testing.T) {
		job, err := tf.client("invalid").Create(ctx, tf.newJob("fixed", "chief", "worker"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		job.Spec.ReplicaSpecs[1].Type = v1beta1.ReplicaTypePS
		if _, err := tf.client("invalid").Update(ctx, job, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("update changing a replica type: %v, want 422", err)
		}
	})
}

// TestRendezvousDefault: a PyTorch job whose torchrunConfig names no
// rendezvous is stored with static, or with c10d when it is elastic.
func TestRendezvousDefault(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	pt := pytorchKind(s)
	for name, elastic := range map[string]*v1beta1.ElasticConfig{
		"fixed":   nil,
		"elastic": {Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4)},
	} {
		job := pt.newJob(name)
		job.Spec.TorchrunConfig = &v1beta1.TorchrunConfig{Enabled: true}
		job.Spec.Elastic = elastic
		if _, err := pt.client("rendezvous").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		got, err := pt.client("rendezvous").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		want := v1beta1.RendezvousBackendStatic
		if elastic != nil {
			want = v1beta1.RendezvousBackendC10d
		}
		if b := got.Spec.TorchrunConfig.RdzvBackend; b != want {
			t.Errorf("%s job stored with rdzvBackend %q, want %q", name, b, want)
		}
	}
}

// TestRestartStrategy: a job is stored with restartStrategy Recreate unless
// it asks for InPlace; any other value is a 422 that names the field.
func TestRestartStrategy(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	pt := pytorchKind(s)
	client := pt.client("restarts")
	for name, strategy := range map[string]v1beta1.RestartStrategy{"unset": "", "in-place": v1beta1.RestartStrategyInPlace} {
		job := pt.newJob(name)
		job.Spec.RunPolicy.RestartStrategy = strategy
		created, err := client.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		want := strategy
		if want == "" {
			want = v1beta1.RestartStrategyRecreate
		}
		if got := created.Spec.RunPolicy.RestartStrategy; got != want {
			t.Errorf("%s: stored restartStrategy %q, want %q", name, got, want)
		}
	}
	job := pt.newJob("reboot")
	job.Spec.RunPolicy.RestartStrategy = "Reboot"
	_, err := client.Create(ctx, job, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !contains(causeFields(err), "spec.runPolicy.restartStrategy") {
		t.Errorf("create with restartStrategy Reboot: %v (fields %v), want 422 naming spec.runPolicy.restartStrategy", err, causeFields(err))
	}
}

// TestAlternativeSpellingsStoredCanonical posts a manifest in the spellings
// of older TensorStack and Kubeflow manifests and reads back the canonical form.
func TestAlternativeSpellingsStoredCanonical(t *testing.T) {
	s := framework.StartTestServer(t, "")
	body := `{
		"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TensorFlowTrainingJob",
		"metadata": {"name": "legacy"},
		"spec": {
			"replicaSpecs": [
				{"type": "Chief", "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}}},
				{"type": "PS", "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}}},
				{"type": "Worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}}}
			],
			"runPolicy": {"cleanUpPolicy": "all"},
			"runMode": {"debug": {"enable": true}}
		}
	}`
	raw, err := restClient(t, s).Post().AbsPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/legacy/tensorflowtrainingjobs").
		Body([]byte(body)).SetHeader("Content-Type", "application/json").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("create: %v: %s", err, raw)
	}
	job, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("legacy").Get(context.Background(), "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	var gotTypes []string
	for _, r := range job.Spec.ReplicaSpecs {
		gotTypes = append(gotTypes, string(r.Type))
	}
	if strings.Join(gotTypes, ",") != "chief,ps,worker" {
		t.Errorf("stored replica types %v, want chief,ps,worker", gotTypes)
	}
	if job.Spec.RunPolicy.CleanUpPolicy != v1beta1.CleanUpPolicyAll {
		t.Errorf("stored cleanUpPolicy %q, want All", job.Spec.RunPolicy.CleanUpPolicy)
	}
	if debug := job.Spec.RunMode.Debug; !debug.Enabled || debug.Enable != nil {
		t.Errorf("stored debug mode enabled=%v enable=%v, want enabled=true and no enable", debug.Enabled, debug.Enable)
	}
}

func TestFieldSelectors(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().PyTorchTrainingJobs("fields")
	for _, name := range []string{"a", "b", "c"} {
		job, err := client.Create(ctx, pytorchKind(s).newJob(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if name != "c" {
			job.Status.Phase = v1beta1.JobRunning
			if _, err := client.UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update status %s: %v", name, err)
			}
		}
	}
	names := func(selector string) string {
		list, err := client.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			t.Fatalf("list %s: %v", selector, err)
		}
		var out []string
		for _, job := range list.Items {
			out = append(out, job.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names("status.phase=Running"); got != "a,b" {
		t.Errorf("status.phase=Running selected %q, want a,b", got)
	}
	if got := names("status.phase!=Running"); got != "c" {
		t.Errorf("status.phase!=Running selected %q, want c", got)
	}
	if got := names("metadata.name=b"); got != "b" {
		t.Errorf("metadata.name=b selected %q, want b", got)
	}
	if _, err := client.List(ctx, metav1.ListOptions{FieldSelector: "spec.runPolicy.backoffLimit=3"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: %v, want 400", err)
	}
}

func TestTableColumns(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	job := tensorflowKind(s).newJob("train", "chief", "worker")
	job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](3)
	created, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("table").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	created.Status.Aggregate.Running = 2
	created.Status.BackoffCount = 1
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("table").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}

	raw, err := restClient(t, s).Get().AbsPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/table/tensorflowtrainingjobs").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if got := strings.Join(columns, ","); got != "Name,Phase,Ready,Restarts,Progress,Age,Mode,Replicas,Duration,ETA,Metric" {
		t.Errorf("columns = %s", got)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table has %d rows, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	want := []any{"train", "Pending", "2/4", float64(1), ""}
	for i, w := range want {
		if cells[i] != w {
			t.Errorf("cell %s = %v, want %v", columns[i], cells[i], w)
		}
	}
	if cells[6] != "Immediate" || cells[7] != "chief:1,worker:3" {
		t.Errorf("wide cells Mode, Replicas = %v, %v; want Immediate, chief:1,worker:3", cells[6], cells[7])
	}
}

// TestDiscovery checks what kubectl api-resources shows.
func TestDiscovery(t *testing.T) {
	s := framework.StartTestServer(t, "")
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := dc.ServerResourcesForGroupVersion(v1beta1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	for resource, short := range map[string]string{"tensorflowtrainingjobs": "tj", "pytorchtrainingjobs": "pj"} {
		r, ok := byName[resource]
		if !ok {
			t.Errorf("%s not discovered", resource)
			continue
		}
		if strings.Join(r.ShortNames, ",") != short || strings.Join(r.Categories, ",") != "trainingjobs" || !r.Namespaced {
			t.Errorf("%s: shortNames %v, categories %v, namespaced %v", resource, r.ShortNames, r.Categories, r.Namespaced)
		}
		for _, verb := range []string{"create", "get", "list", "watch", "update", "patch", "delete", "deletecollection"} {
			if !contains(r.Verbs, verb) {
				t.Errorf("%s lacks verb %s: %v", resource, verb, r.Verbs)
			}
		}
		if status := byName[resource+"/status"]; !contains(status.Verbs, "update") || !contains(status.Verbs, "patch") {
			t.Errorf("%s/status verbs = %v", resource, status.Verbs)
		}
		for _, action := range []string{"pause", "resume", "debug", "progress"} {
			if verbs := byName[resource+"/"+action].Verbs; strings.Join(verbs, ",") != "create" {
				t.Errorf("%s/%s verbs = %v, want create", resource, action, verbs)
			}
		}
	}
}

func TestOpenAPI(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	rc := restClient(t, s)

	var v2 struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	raw, err := rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get /openapi/v2: %v", err)
	}
	if err := json.Unmarshal(raw, &v2); err != nil {
		t.Fatal(err)
	}
	assertKindsDescribed(t, "v2", v2.Definitions)
	assertRefsResolve(t, "v2", raw, "#/definitions/", v2.Definitions)

	var v3 struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	raw, err = rc.Get().AbsPath("/openapi/v3/apis/batch.tensorstack.dev/v1beta1").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get /openapi/v3: %v", err)
	}
	if err := json.Unmarshal(raw, &v3); err != nil {
		t.Fatal(err)
	}
	assertKindsDescribed(t, "v3", v3.Components.Schemas)
	assertRefsResolve(t, "v3", raw, "#/components/schemas/", v3.Components.Schemas)
}

func assertKindsDescribed(t *testing.T, doc string, schemas map[string]map[string]any) {
	t.Helper()
	for _, kind := range []string{"TensorFlowTrainingJob", "PyTorchTrainingJob"} {
		found := false
		for _, schema := range schemas {
			gvks, _ := schema["x-kubernetes-group-version-kind"].([]any)
			for _, gvk := range gvks {
				m := gvk.(map[string]any)
				if m["group"] == v1beta1.GroupName && m["version"] == "v1beta1" && m["kind"] == kind {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("OpenAPI %s has no schema with x-kubernetes-group-version-kind %s", doc, kind)
		}
	}
}

// assertRefsResolve checks that every schema $ref in the document names a
// schema the document contains.
func assertRefsResolve(t *testing.T, doc string, raw []byte, prefix string, schemas map[string]map[string]any) {
	t.Helper()
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, prefix) {
				if schemas[strings.TrimPrefix(ref, prefix)] == nil {
					t.Errorf("OpenAPI %s: dangling $ref %s", doc, ref)
				}
			}
			for _, child := range v {
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	var whole any
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatal(err)
	}
	walk(whole)
}

func TestServerSideApply(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("apply")
	worker := func(replicas int32) *applyv1beta1.TensorFlowTrainingJobApplyConfiguration {
		template := corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("tensorflow").WithImage("tf:2")))
		return applyv1beta1.TensorFlowTrainingJob("train", "apply").WithSpec(applyv1beta1.TensorFlowTrainingJobSpec().
			WithReplicaSpecs(applyv1beta1.ReplicaSpec().WithType(v1beta1.ReplicaTypeWorker).WithReplicas(replicas).
				WithTemplate(template)))
	}

	job, err := client.Apply(ctx, worker(2), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply by alice: %v", err)
	}
	if len(job.ManagedFields) == 0 || job.ManagedFields[0].Manager != "alice" || job.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields = %+v, want an Apply entry of alice", job.ManagedFields)
	}
	_, err = client.Apply(ctx, worker(5), metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply by bob: %v, want 409", err)
	}
	job, err = client.Apply(ctx, worker(5), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatalf("forced apply by bob: %v", err)
	}
	if *job.Spec.ReplicaSpecs[0].Replicas != 5 {
		t.Errorf("replicas after forced apply = %d, want 5", *job.Spec.ReplicaSpecs[0].Replicas)
	}

	// A merge patch through the status subresource changes only status.
	patch := []byte(`{"status":{"phase":"Running"},"spec":{"runPolicy":{"backoffLimit":7}}}`)
	job, err = client.Patch(ctx, "train", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("status patch: %v", err)
	}
	if job.Status.Phase != v1beta1.JobRunning || *job.Spec.RunPolicy.BackoffLimit != 3 {
		t.Errorf("after status patch: phase %q, backoffLimit %d; want Running, 3", job.Status.Phase, *job.Spec.RunPolicy.BackoffLimit)
	}
}

// TestDataSurvivesRestart stops the server and starts a new one on the same
// embedded etcd directory.
func TestDataSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first := framework.StartTestServer(t, dir)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := first.Client.BatchV1beta1().PyTorchTrainingJobs("keep").Create(ctx, pytorchKind(first).newJob(fmt.Sprintf("job-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	first.Stop()

	second := framework.StartTestServer(t, dir)
	list, err := second.Client.BatchV1beta1().PyTorchTrainingJobs("keep").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list after restart: %v", err)
	}
	if len(list.Items) != 3 {
		t.Errorf("after restart %d jobs, want 3", len(list.Items))
	}
}

func restClient(t *testing.T, s *framework.TestServer) *rest.RESTClient {
	t.Helper()
	config := rest.CopyConfig(s.Config)
	config.GroupVersion = &v1beta1.SchemeGroupVersion
	config.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestHealthChecksIncludeEtcd checks that readiness reflects the storage.
func TestHealthChecksIncludeEtcd(t *testing.T) {
	s := framework.StartTestServer(t, "")
	for _, path := range []string{"/readyz", "/livez", "/healthz"} {
		raw, err := restClient(t, s).Get().AbsPath(path).Param("verbose", "true").DoRaw(context.Background())
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if !strings.Contains(string(raw), "[+]etcd ok") {
			t.Errorf("GET %s does not report etcd:\n%s", path, raw)
		}
	}
}
