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

package trainingruntime

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
)

// getter serves runtimes by namespace and name.
type getter map[string]runtime.Object

func (g getter) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := request.NamespaceFrom(ctx)
	if obj, ok := g[ns+"/"+name]; ok {
		return obj.DeepCopyObject(), nil
	}
	return nil, apierrors.NewNotFound(batch.Resource("runtimes"), name)
}

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}

func newJob(namespace string, ref *batch.RuntimeRef, trainer *batch.Trainer) *batch.PyTorchTrainingJob {
	return &batch.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: namespace},
		Spec:       batch.PyTorchTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{RuntimeRef: ref, Trainer: trainer}},
	}
}

// TestResolve: a job naming a runtime gets the runtime's spec with the
// trainer applied, defaults after, and a record of the runtime.
func TestResolve(t *testing.T) {
	cluster := getter{"/torch": &batch.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "torch", UID: "u-1", ResourceVersion: "42"},
		Spec: batch.TrainingRuntimeSpec{Template: batch.TrainingJobTemplate{
			Labels: map[string]string{"runtime": "torch"}, Pytorch: torchRuntimeSpec()}},
	}}
	r := NewResolver(cluster, getter{}, nil, testScheme())
	job := newJob("team-a", &batch.RuntimeRef{Name: "torch"}, &batch.Trainer{NumNodes: ptr.To[int32](2)})
	if err := r.Resolve(context.Background(), batch.PyTorchKind, job, &job.Spec); err != nil {
		t.Fatal(err)
	}
	got := job.Status.Runtime
	if got == nil || got.Kind != batch.ClusterTrainingRuntimeKind || got.Name != "torch" || got.UID != "u-1" ||
		got.ResourceVersion != "42" || len(got.Hash) != 64 {
		t.Fatalf("status.runtime %+v", got)
	}
	if job.Spec.RuntimeRef.Kind != batch.ClusterTrainingRuntimeKind {
		t.Errorf("runtimeRef.kind %q, want it filled in", job.Spec.RuntimeRef.Kind)
	}
	if job.Labels["runtime"] != "torch" {
		t.Errorf("labels %v, want the template's", job.Labels)
	}
	if n := len(job.Spec.ReplicaSpecs); n != 2 || *job.Spec.ReplicaSpecs[1].Replicas != 1 {
		t.Fatalf("replica specs %+v", job.Spec.ReplicaSpecs)
	}
	// The runtime's run policy, not the defaults; what it leaves out, the
	// defaults.
	if p := job.Spec.RunPolicy; *p.BackoffLimit != 5 || p.CleanUpPolicy != batch.CleanUpPolicyAll || p.RestartStrategy == "" {
		t.Errorf("run policy %+v", p)
	}
	if tc := job.Spec.TorchrunConfig; tc == nil || tc.RdzvBackend == "" || tc.MaxRestarts == nil {
		t.Errorf("torchrun config %+v, want it defaulted after the merge", tc)
	}

	// Another template, another hash.
	cluster["/torch"].(*batch.ClusterTrainingRuntime).Spec.Template.Pytorch.RunPolicy.BackoffLimit = ptr.To[int32](6)
	again := newJob("team-a", &batch.RuntimeRef{Name: "torch"}, nil)
	if err := r.Resolve(context.Background(), batch.PyTorchKind, again, &again.Spec); err != nil {
		t.Fatal(err)
	}
	if again.Status.Runtime.Hash == got.Hash {
		t.Errorf("a changed template kept the hash %s", got.Hash)
	}
}

// TestResolveRefused: what cannot be applied is the API's error, naming
// the field.
func TestResolveRefused(t *testing.T) {
	cluster := getter{"/torch": &batch.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "torch"},
		Spec: batch.TrainingRuntimeSpec{Template: batch.TrainingJobTemplate{Pytorch: torchRuntimeSpec()}}}}
	namespaced := getter{"team-a/local": &batch.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: "team-a"},
		Spec: batch.TrainingRuntimeSpec{Template: batch.TrainingJobTemplate{Pytorch: torchRuntimeSpec()}}}}
	deny := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetResource() == "trainingruntimes" && a.GetVerb() == "get" && a.GetNamespace() == "team-a" && a.GetUser().GetName() == "alice" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no rule", nil
	})
	r := NewResolver(cluster, namespaced, deny, testScheme())
	asAlice := request.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	local := &batch.RuntimeRef{Name: "local", Kind: batch.TrainingRuntimeKind}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		job   *batch.PyTorchTrainingJob
		kind  batch.KindInfo
		check func(error) bool
		field string
	}{
		{"allowed", asAlice, newJob("team-a", local, nil), batch.PyTorchKind, func(err error) bool { return err == nil }, ""},
		{"a runtime of another namespace", asAlice, newJob("team-b", local, nil), batch.PyTorchKind,
			apierrors.IsForbidden, "trainingruntimes"}, // alice may not get runtimes in team-b
		{"a cluster runtime alice may not get", asAlice, newJob("team-a", &batch.RuntimeRef{Name: "torch"}, nil), batch.PyTorchKind,
			apierrors.IsForbidden, "clustertrainingruntimes"},
		// Only a server that authenticates no one has requests without a
		// user, and it authorizes none.
		{"no user", context.Background(), newJob("team-b", local, nil), batch.PyTorchKind, apierrors.IsInvalid, "spec.runtimeRef.name"},
		{"a missing runtime", asAlice, newJob("team-a", &batch.RuntimeRef{Name: "nope", Kind: batch.TrainingRuntimeKind}, nil),
			batch.PyTorchKind, apierrors.IsInvalid, "spec.runtimeRef.name"},
		{"a kind that is no runtime's", asAlice, newJob("team-a", &batch.RuntimeRef{Name: "local", Kind: "Pod"}, nil),
			batch.PyTorchKind, apierrors.IsInvalid, "spec.runtimeRef.kind"},
		{"too many nodes", asAlice, newJob("team-a", local, &batch.Trainer{NumNodes: ptr.To[int32](1001)}),
			batch.PyTorchKind, apierrors.IsInvalid, "spec.trainer.numNodes"},
		{"a variable the controller sets", asAlice, newJob("team-a", local, &batch.Trainer{
			Env: []corev1.EnvVar{{Name: "MASTER_ADDR", Value: "x"}}}), batch.PyTorchKind, apierrors.IsInvalid, "spec.trainer.env[0].name"},
		{"a runtime of another kind", asAlice, newJob("team-a", local, nil), batch.XGBoostKind, apierrors.IsInvalid, "spec.runtimeRef"},
	} {
		err := r.Resolve(tc.ctx, tc.kind, tc.job, &tc.job.Spec)
		if !tc.check(err) || (err != nil && !strings.Contains(err.Error(), tc.field)) {
			t.Errorf("%s: %v, want one naming %q", tc.name, err, tc.field)
		}
	}

	everyone := NewResolver(cluster, namespaced, nil, testScheme())
	job := newJob("team-b", local, nil)
	err := everyone.Resolve(context.Background(), batch.PyTorchKind, job, &job.Spec)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.runtimeRef.name") ||
		!strings.Contains(err.Error(), `namespace "team-b"`) {
		t.Errorf("a TrainingRuntime of another namespace: %v, want a 422 naming spec.runtimeRef.name and the namespace", err)
	}
}
