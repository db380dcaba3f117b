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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apiserver"
	applyv1beta1 "tensorstack.dev/training/pkg/generated/applyconfiguration/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// torchTemplate is a runtime's template of a PyTorch job: a master and a
// worker on the given image.
func torchTemplate(image string) v1beta1.TrainingJobTemplate {
	specs := replicaSpecs(v1beta1.PyTorchContainerName, []v1beta1.ReplicaType{v1beta1.ReplicaTypeMaster, v1beta1.ReplicaTypeWorker})
	for i := range specs {
		specs[i].Template.Spec.Containers[0].Image = image
	}
	return v1beta1.TrainingJobTemplate{
		Labels:  map[string]string{"runtime": "torch"},
		Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}},
	}
}

// TestRuntimes stores, reads, lists as a table, changes and refuses
// runtimes of both scopes.
func TestRuntimes(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	namespaced := s.Client.BatchV1beta1().TrainingRuntimes("team-a")
	cluster := s.Client.BatchV1beta1().ClusterTrainingRuntimes()

	created, err := cluster.Create(ctx, &v1beta1.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "torch-distributed"},
		Spec:       v1beta1.TrainingRuntimeSpec{Template: torchTemplate("registry.example/train:1")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a ClusterTrainingRuntime: %v", err)
	}
	if created.Generation != 1 || created.Namespace != "" {
		t.Errorf("created: generation %d namespace %q, want 1 and none", created.Generation, created.Namespace)
	}
	// Stored defaulted, as a job's spec is.
	if created.Spec.Template.Pytorch.RunPolicy.BackoffLimit == nil {
		t.Errorf("the template's run policy was not defaulted: %+v", created.Spec.Template.Pytorch.RunPolicy)
	}

	// A change of the spec is a new generation; of the labels, not.
	created.Spec.Template.Pytorch.ReplicaSpecs[1].Template.Spec.Containers[0].Image = "registry.example/train:2"
	updated, err := cluster.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Generation != 2 {
		t.Errorf("generation after a spec change %d, want 2", updated.Generation)
	}
	updated.Labels = map[string]string{"team": "platform"}
	if relabelled, err := cluster.Update(ctx, updated, metav1.UpdateOptions{}); err != nil || relabelled.Generation != 2 {
		t.Errorf("generation after a label change %v (%v), want 2", relabelled.Generation, err)
	}

	if _, err := namespaced.Create(ctx, &v1beta1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "tf-ps"},
		Spec: v1beta1.TrainingRuntimeSpec{Template: v1beta1.TrainingJobTemplate{Tensorflow: &v1beta1.TensorFlowTrainingJobSpec{
			TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: replicaSpecs(v1beta1.TensorFlowContainerName, []v1beta1.ReplicaType{v1beta1.ReplicaTypeWorker})},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a TrainingRuntime: %v", err)
	}
	if list, err := namespaced.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Errorf("list in team-a: %v, %v", list, err)
	}
	if list, err := s.Client.BatchV1beta1().TrainingRuntimes("team-b").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("list in team-b: %v, %v", list, err)
	}

	// kubectl get's table: name, kind, image, age.
	table := &metav1.Table{}
	if err := restClient(t, s).Get().AbsPath("/apis/batch.tensorstack.dev/v1beta1/clustertrainingruntimes").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
		t.Fatalf("get as a table: %v", err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if strings.Join(columns, ",") != "Name,Kind,Image,Age" || len(table.Rows) != 1 {
		t.Fatalf("table columns %v, %d rows", columns, len(table.Rows))
	}
	if cells := table.Rows[0].Cells; cells[0] != "torch-distributed" || cells[1] != "PyTorchTrainingJob" || cells[2] != "registry.example/train:1" {
		t.Errorf("row %v", cells)
	}

	// Refused, with the field named, and nothing stored.
	bad := []struct {
		name     string
		template v1beta1.TrainingJobTemplate
		field    string
	}{
		{"no kind", v1beta1.TrainingJobTemplate{}, "spec.template"},
		{"two kinds", func() v1beta1.TrainingJobTemplate {
			tmpl := torchTemplate("registry.example/train:1")
			tmpl.Generic = &v1beta1.GenericJobSpec{TrainingJobSpec: tmpl.Pytorch.TrainingJobSpec}
			return tmpl
		}(), "spec.template.pytorch"}, // the first kind by name, generic, is the one it holds
		{"no image", torchTemplate(""), "spec.template.pytorch.replicaSpecs[0].template.spec.containers[0].image"},
	}
	for _, tc := range bad {
		_, err := namespaced.Create(ctx, &v1beta1.TrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec:       v1beta1.TrainingRuntimeSpec{Template: tc.template},
		}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err %v, want a 422 naming %s", tc.name, err, tc.field)
		}
	}
	if _, err := namespaced.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused runtime was stored: %v", err)
	}
}

// TestJobsFromRuntimes: a job naming a runtime is stored complete, with the
// runtime's spec, the job's own fields and its trainer applied, and a
// record of the runtime; a later change of the runtime reaches new jobs
// only; what cannot be applied is refused, naming the field, and nothing
// is stored.
func TestJobsFromRuntimes(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	const ns = "team-a"
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs(ns)
	cluster := s.Client.BatchV1beta1().ClusterTrainingRuntimes()

	tmpl := torchTemplate("registry.example/train:1")
	tmpl.Pytorch.RunPolicy.BackoffLimit = ptr.To[int32](7)
	for i := range tmpl.Pytorch.ReplicaSpecs {
		c := &tmpl.Pytorch.ReplicaSpecs[i].Template.Spec.Containers[0]
		c.Command, c.Args = []string{"launch"}, []string{"python3", "$(TRAINING_SCRIPT)"}
		c.Env = []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "WARN"}}
	}
	runtime, err := cluster.Create(ctx, &v1beta1.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "torch-distributed"},
		Spec:       v1beta1.TrainingRuntimeSpec{Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	fromRuntime := func(name string, trainer *v1beta1.Trainer) *v1beta1.PyTorchTrainingJob {
		return &v1beta1.PyTorchTrainingJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "alice"}},
			Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
				RuntimeRef: &v1beta1.RuntimeRef{Name: "torch-distributed"},
				Trainer:    trainer,
			}},
		}
	}
	trainer := &v1beta1.Trainer{
		NumNodes: ptr.To[int32](3),
		Env:      []corev1.EnvVar{{Name: "EPOCHS", Value: "2"}},
		Args:     []string{"--lr", "0.1"},
		ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		Script: &v1beta1.TrainerScript{Name: "train.py", Source: "print('hello')\n"},
	}
	job, err := jobs.Create(ctx, fromRuntime("first", trainer), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a job from a runtime: %v", err)
	}
	if r := job.Status.Runtime; r == nil || r.Kind != "ClusterTrainingRuntime" || r.Name != runtime.Name ||
		r.UID != string(runtime.UID) || r.ResourceVersion != runtime.ResourceVersion || len(r.Hash) != 64 {
		t.Fatalf("status.runtime %+v, want the runtime %s at %s", r, runtime.UID, runtime.ResourceVersion)
	}
	if job.Labels["runtime"] != "torch" || job.Labels["owner"] != "alice" {
		t.Errorf("labels %v: want the runtime's and the job's", job.Labels)
	}
	if *job.Spec.RunPolicy.BackoffLimit != 7 {
		t.Errorf("backoffLimit %d, want the runtime's 7, not the default", *job.Spec.RunPolicy.BackoffLimit)
	}
	specs := job.Spec.ReplicaSpecs
	if len(specs) != 2 || *specs[0].Replicas != 1 || *specs[1].Replicas != 2 {
		t.Fatalf("replica specs %+v, want a master and 2 workers", specs)
	}
	for _, r := range specs {
		c := r.Template.Spec.Containers[0]
		if c.Image != "registry.example/train:1" || cmp.Diff([]string{"launch"}, c.Command) != "" ||
			cmp.Diff([]string{"python3", "$(TRAINING_SCRIPT)", "--lr", "0.1"}, c.Args) != "" {
			t.Errorf("%s: image %s command %q args %q", r.Type, c.Image, c.Command, c.Args)
		}
		if cmp.Diff([]corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "WARN"}, {Name: "EPOCHS", Value: "2"}}, c.Env) != "" {
			t.Errorf("%s: env %v", r.Type, c.Env)
		}
		if cpu := c.Resources.Limits[corev1.ResourceCPU]; cpu.String() != "1" {
			t.Errorf("%s: limits %v", r.Type, c.Resources.Limits)
		}
	}

	// The runtime changes: the job that exists does not, a new job gets
	// the change, and a different hash.
	runtime.Spec.Template.Pytorch.ReplicaSpecs[1].Template.Spec.Containers[0].Image = "registry.example/train:2"
	if _, err := cluster.Update(ctx, runtime, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := jobs.Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(job.Spec, stored.Spec); diff != "" || stored.Status.Runtime.ResourceVersion != runtime.ResourceVersion {
		t.Errorf("the stored job changed with its runtime (-before +after):\n%s", diff)
	}
	second, err := jobs.Create(ctx, fromRuntime("second", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := second.Spec.ReplicaSpecs[1].Template.Spec.Containers[0].Image; img != "registry.example/train:2" ||
		second.Status.Runtime.Hash == job.Status.Runtime.Hash {
		t.Errorf("a job made after the change: image %s, hash %s (the first's %s)", img, second.Status.Runtime.Hash, job.Status.Runtime.Hash)
	}

	// The status subresource cannot rewrite the record, nor an update the
	// trainer.
	second.Status.Runtime.Name = "forged"
	if updated, err := jobs.UpdateStatus(ctx, second, metav1.UpdateOptions{}); err != nil || updated.Status.Runtime.Name != "torch-distributed" {
		t.Errorf("status write: %v, runtime %+v", err, updated.Status.Runtime)
	}
	second, _ = jobs.Get(ctx, "second", metav1.GetOptions{})
	second.Spec.Trainer = &v1beta1.Trainer{NumNodes: ptr.To[int32](4)}
	if _, err := jobs.Update(ctx, second, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.trainer") {
		t.Errorf("changing the trainer: %v, want a 422 naming spec.trainer", err)
	}

	// A job without a runtime cannot claim one.
	plain := &v1beta1.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec:   v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: torchTemplate("x:1").Pytorch.ReplicaSpecs}},
		Status: v1beta1.TrainingJobStatus{Runtime: &v1beta1.AppliedRuntime{Name: "forged"}}}
	if created, err := jobs.Create(ctx, plain, metav1.CreateOptions{}); err != nil || created.Status.Runtime != nil {
		t.Errorf("a job without runtimeRef: %v, status.runtime %+v", err, created.Status.Runtime)
	}

	// Server-side apply that creates the job applies the runtime as
	// create does.
	applied, err := jobs.Apply(ctx, applyv1beta1.PyTorchTrainingJob("applied", ns).WithSpec(applyv1beta1.PyTorchTrainingJobSpec().
		WithRuntimeRef(applyv1beta1.RuntimeRef().WithName("torch-distributed")).
		WithTrainer(applyv1beta1.Trainer().WithNumNodes(4))), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if applied.Status.Runtime == nil || len(applied.Spec.ReplicaSpecs) != 2 || *applied.Spec.ReplicaSpecs[1].Replicas != 3 {
		t.Errorf("applied job: runtime %+v, replica specs %+v", applied.Status.Runtime, applied.Spec.ReplicaSpecs)
	}

	// A TrainingRuntime serves its own namespace only.
	if _, err := s.Client.BatchV1beta1().TrainingRuntimes("team-b").Create(ctx, &v1beta1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: v1beta1.TrainingRuntimeSpec{Template: torchTemplate("x:1")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	elsewhere := fromRuntime("elsewhere", nil)
	elsewhere.Spec.RuntimeRef = &v1beta1.RuntimeRef{Name: "local", Kind: "TrainingRuntime"}
	if _, err := s.Client.BatchV1beta1().PyTorchTrainingJobs("team-b").Create(ctx, elsewhere.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Errorf("a TrainingRuntime used in its namespace: %v", err)
	}

	hostile := []struct {
		name  string
		body  func() *v1beta1.PyTorchTrainingJob
		field string
	}{
		{"a missing runtime", func() *v1beta1.PyTorchTrainingJob {
			j := fromRuntime("bad", nil)
			j.Spec.RuntimeRef.Name = "nope"
			return j
		}, "spec.runtimeRef.name"},
		{"a TrainingRuntime of another namespace", func() *v1beta1.PyTorchTrainingJob { return elsewhere.DeepCopy() }, "spec.runtimeRef.name"},
		{"numNodes 0", func() *v1beta1.PyTorchTrainingJob {
			return fromRuntime("bad", &v1beta1.Trainer{NumNodes: ptr.To[int32](0)})
		}, "spec.trainer.numNodes"},
		{"numNodes that leaves the workers none", func() *v1beta1.PyTorchTrainingJob {
			return fromRuntime("bad", &v1beta1.Trainer{NumNodes: ptr.To[int32](1)})
		}, "spec.trainer.numNodes"},
		{"a script of 1 MiB", func() *v1beta1.PyTorchTrainingJob {
			return fromRuntime("bad", &v1beta1.Trainer{Script: &v1beta1.TrainerScript{Name: "big.py", Source: strings.Repeat("#", 1<<20)}})
		}, "spec.trainer.script.source"},
		{"a variable the controller sets", func() *v1beta1.PyTorchTrainingJob {
			return fromRuntime("bad", &v1beta1.Trainer{Env: []corev1.EnvVar{{Name: "TENSORSTACK_JOB_NAME", Value: "x"}}})
		}, "spec.trainer.env[0].name"},
		{"a script name with a slash", func() *v1beta1.PyTorchTrainingJob {
			return fromRuntime("bad", &v1beta1.Trainer{Script: &v1beta1.TrainerScript{Name: "../x.py", Source: "pass"}})
		}, "spec.trainer.script.name"},
	}
	for _, tc := range hostile {
		_, err := s.Client.BatchV1beta1().PyTorchTrainingJobs(ns).Create(ctx, tc.body(), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want a 422 naming %s", tc.name, err, tc.field)
		}
	}
	// A runtime of another kind.
	tf := &v1beta1.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			RuntimeRef: &v1beta1.RuntimeRef{Name: "torch-distributed"}}}}
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs(ns).Create(ctx, tf, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.runtimeRef") || !strings.Contains(err.Error(), "PyTorchTrainingJob") {
		t.Errorf("a runtime of another kind: %v, want a 422 naming spec.runtimeRef and the kind it makes", err)
	}
	// numNodes of 2^31 does not fit the field: a 400 naming it.
	body := fmt.Sprintf(`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"PyTorchTrainingJob","metadata":{"name":"bad"},`+
		`"spec":{"runtimeRef":{"name":"torch-distributed"},"trainer":{"numNodes":%d}}}`, int64(1)<<31)
	err = restClient(t, s).Post().AbsPath("/apis/batch.tensorstack.dev/v1beta1/namespaces", ns, "pytorchtrainingjobs").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "numNodes") {
		t.Errorf("numNodes 2^31: %v, want a 400 naming numNodes", err)
	}
	if _, err := jobs.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused job was stored: %v", err)
	}
}

// TestShippedRuntimes: a server given --shipped-runtimes-image installs a
// runtime per kind that a job can name at once; at its next start it brings
// the runtimes it made back to what it ships, and leaves alone one whose
// owner turned autoupdate off.
func TestShippedRuntimes(t *testing.T) {
	dir := t.TempDir()
	withImage := func(image string) func(*apiserver.Config) {
		return func(c *apiserver.Config) { c.ShippedRuntimesImage = image }
	}
	ctx := context.Background()
	first := framework.StartTestServerWith(t, dir, withImage("registry.example/train:1"))
	cluster := first.Client.BatchV1beta1().ClusterTrainingRuntimes()
	list, err := cluster.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rt := range list.Items {
		names = append(names, rt.Name)
	}
	if strings.Join(names, ",") != "generic,mpi,tensorflow,torch-distributed,xgboost" {
		t.Fatalf("shipped runtimes %v", names)
	}
	job := &v1beta1.MPIJob{ObjectMeta: metav1.ObjectMeta{Name: "allreduce"}, Spec: v1beta1.MPIJobSpec{
		TrainingJobSpec: v1beta1.TrainingJobSpec{
			RuntimeRef: &v1beta1.RuntimeRef{Name: "mpi"},
			Trainer: &v1beta1.Trainer{NumNodes: ptr.To[int32](2),
				Script: &v1beta1.TrainerScript{Name: "allreduce.py", Source: "from mpi4py import MPI\n"}},
		}}}
	created, err := first.Client.BatchV1beta1().MPIJobs("team-a").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a job from the shipped mpi runtime: %v", err)
	}
	if workers := created.Spec.ReplicaSpecs[1]; workers.Type != v1beta1.ReplicaTypeWorker || *workers.Replicas != 2 {
		t.Errorf("replica specs %+v", created.Spec.ReplicaSpecs)
	}

	// One runtime changed under autoupdate, one with autoupdate off.
	torch, _ := cluster.Get(ctx, "torch-distributed", metav1.GetOptions{})
	torch.Spec.Template.Pytorch.RunPolicy.BackoffLimit = ptr.To[int32](9)
	if _, err := cluster.Update(ctx, torch, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mpi, _ := cluster.Get(ctx, "mpi", metav1.GetOptions{})
	mpi.Annotations[apiserver.AnnotationAutoUpdate] = "false"
	mpi.Spec.Template.MPI.RunPolicy.BackoffLimit = ptr.To[int32](9)
	if _, err := cluster.Update(ctx, mpi, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Stop()

	second := framework.StartTestServerWith(t, dir, withImage("registry.example/train:2"))
	cluster = second.Client.BatchV1beta1().ClusterTrainingRuntimes()
	torch, _ = cluster.Get(ctx, "torch-distributed", metav1.GetOptions{})
	if img := torch.Spec.Template.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Image; img != "registry.example/train:2" ||
		*torch.Spec.Template.Pytorch.RunPolicy.BackoffLimit != 3 {
		t.Errorf("torch-distributed after a restart: image %s backoffLimit %d, want the shipped runtime on the new image",
			img, *torch.Spec.Template.Pytorch.RunPolicy.BackoffLimit)
	}
	mpi, _ = cluster.Get(ctx, "mpi", metav1.GetOptions{})
	if img := mpi.Spec.Template.MPI.ReplicaSpecs[0].Template.Spec.Containers[0].Image; img != "registry.example/train:1" ||
		*mpi.Spec.Template.MPI.RunPolicy.BackoffLimit != 9 {
		t.Errorf("mpi with autoupdate off: image %s backoffLimit %d, want its owner's", img, *mpi.Spec.Template.MPI.RunPolicy.BackoffLimit)
	}
}
