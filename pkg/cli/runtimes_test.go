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

package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func pyTorchTemplate(specs ...v1beta1.ReplicaSpec) v1beta1.TrainingJobTemplate {
	return v1beta1.TrainingJobTemplate{Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}}
}

func tensorFlowTemplate(specs ...v1beta1.ReplicaSpec) v1beta1.TrainingJobTemplate {
	return v1beta1.TrainingJobTemplate{Tensorflow: &v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}}
}

func genericTemplate(specs ...v1beta1.ReplicaSpec) v1beta1.TrainingJobTemplate {
	return v1beta1.TrainingJobTemplate{Generic: &v1beta1.GenericJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}}
}

func newClusterRuntime(name string, age time.Duration, template v1beta1.TrainingJobTemplate) *v1beta1.ClusterTrainingRuntime {
	return &v1beta1.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(testNow.Add(-age))},
		Spec:       v1beta1.TrainingRuntimeSpec{Template: template},
	}
}

func newTrainingRuntime(namespace, name string, age time.Duration, template v1beta1.TrainingJobTemplate) *v1beta1.TrainingRuntime {
	return &v1beta1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, CreationTimestamp: metav1.NewTime(testNow.Add(-age))},
		Spec:       v1beta1.TrainingRuntimeSpec{Template: template},
	}
}

// newRuntimesFixture has a PyTorch runtime for the cluster and a TensorFlow
// one of the same name in the default namespace, which stands in for it there.
func newRuntimesFixture(t *testing.T) *fixture {
	master := replicas("master", 1, "pytorch")
	master.Template.Spec.Containers[0].Image = "pytorch:2.6"
	return newFixture(t,
		newClusterRuntime("torch", 30*24*time.Hour, pyTorchTemplate(master, replicas("worker", 1, "pytorch"))),
		newClusterRuntime("generic", 2*time.Hour, genericTemplate(replicas("node", 1, "main"))),
		newTrainingRuntime("default", "torch", 5*time.Minute, tensorFlowTemplate(replicas("worker", 2, "tensorflow"))),
		newTrainingRuntime("default", "bare", time.Minute, genericTemplate(v1beta1.ReplicaSpec{Type: "node"})),
		newTrainingRuntime("team", "team-only", time.Minute, genericTemplate(replicas("node", 1))),
	)
}

func TestRuntimesTable(t *testing.T) {
	f := newRuntimesFixture(t)
	want := `NAME      SCOPE     KIND                    IMAGE         AGE
bare      default   GenericJob              -             60s
torch     default   TensorFlowTrainingJob   trainer       5m
generic   Cluster   GenericJob              trainer       120m
torch     Cluster   PyTorchTrainingJob      pytorch:2.6   30d
`
	if out := f.mustRun("runtimes"); out != want {
		t.Errorf("output:\n%s\nwant (the namespace's runtimes first, as run looks them up):\n%s", out, want)
	}

	out := f.mustRun("runtimes", "-n", "team")
	if want := "team-only   team      GenericJob"; !strings.Contains(out, want) || strings.Contains(out, "default") {
		t.Errorf("-n team: output\n%s\nwant team's runtime and the cluster's only", out)
	}
}

func TestRuntimesLeaveOutAScopeTheUserMayNotList(t *testing.T) {
	f := newRuntimesFixture(t)
	f.training.PrependReactor("list", "clustertrainingruntimes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1beta1.Resource("clustertrainingruntimes"), "", errors.New(`User "alice" cannot list them`))
	})
	out := f.mustRun("runtimes")
	if strings.Contains(out, "Cluster") || !strings.Contains(out, "bare") {
		t.Errorf("output:\n%s\nwant the namespace's runtimes only", out)
	}
	want := "Warning: the ClusterTrainingRuntimes are left out: clustertrainingruntimes.batch.tensorstack.dev is forbidden: User \"alice\" cannot list them\n"
	if f.errOut.String() != want {
		t.Errorf("stderr %q; want %q", f.errOut.String(), want)
	}

	f.training.PrependReactor("list", "trainingruntimes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if err := f.run("runtimes"); err == nil || !strings.HasPrefix(err.Error(), `listing the TrainingRuntimes of namespace "default": `) {
		t.Errorf("other errors than Forbidden: %v; want the error", err)
	}
}

func TestRuntimesNone(t *testing.T) {
	f := newFixture(t)
	if out := f.mustRun("runtimes"); out != "" {
		t.Errorf("output %q; want none", out)
	}
	if want := "No training runtimes found for default namespace.\n"; f.errOut.String() != want {
		t.Errorf("stderr %q; want %q", f.errOut.String(), want)
	}
}

func TestRuntimeCompletion(t *testing.T) {
	f := newRuntimesFixture(t)
	if got := strings.Join(f.complete("run", "mnist", "--runtime", ""), " "); got != "bare generic torch" {
		t.Errorf("completing --runtime: %q; want each runtime's name once", got)
	}
	if got := strings.Join(f.complete("run", "mnist", "--runtime-kind", ""), " "); got != "ClusterTrainingRuntime TrainingRuntime" {
		t.Errorf("completing --runtime-kind: %q", got)
	}
}
