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

package jobpods

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Jobs written from one template within the TTL cost one dry run per
// replica type; a refusal, another template, or an expired acceptance is
// judged again.
func TestAcceptedPodsAreNotDryRunAgain(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	var mu sync.Mutex
	sent := 0
	refuse := false
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		sent++
		if refuse {
			return true, nil, errors.New("refused")
		}
		return true, action.(clienttesting.CreateAction).GetObject(), nil
	})
	plugin := &podValidation{Handler: admission.NewHandler(admission.Create, admission.Update), client: client,
		accepted: newAcceptedPods(clk)}
	dryRuns := func(job *batch.TensorFlowTrainingJob) int {
		t.Helper()
		mu.Lock()
		before := sent
		mu.Unlock()
		_ = plugin.Validate(context.Background(), attributes(job, nil, admission.Create, ""), objectInterfaces())
		mu.Lock()
		defer mu.Unlock()
		return sent - before
	}
	named := func(name string, change ...func(*batch.TensorFlowTrainingJob)) *batch.TensorFlowTrainingJob {
		job := newTFJob(t, 2)
		job.Name = name
		for _, c := range change {
			c(job)
		}
		return job
	}
	image := func(image string) func(*batch.TensorFlowTrainingJob) {
		return func(job *batch.TensorFlowTrainingJob) {
			for i := range job.Spec.ReplicaSpecs {
				job.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Image = image
			}
		}
	}

	if n := dryRuns(named("sweep-1")); n != 2 {
		t.Fatalf("first job: %d dry runs, want 2 (chief, worker)", n)
	}
	if n := dryRuns(named("sweep-2")); n != 0 {
		t.Errorf("a job of another name from the same template: %d dry runs, want none", n)
	}
	// The job's name in the image is not the job's name the controller
	// writes: another image is judged.
	if n := dryRuns(named("resnet", image("registry.example/resnet:1"))); n != 2 {
		t.Errorf("another image: %d dry runs, want 2", n)
	}
	if n := dryRuns(named("resnet2", image("registry.example/resnet2:1"))); n != 2 {
		t.Errorf("an image that differs by what differs in the names: %d dry runs, want 2", n)
	}
	clk.Step(acceptedTTL)
	if n := dryRuns(named("sweep-3")); n != 2 {
		t.Errorf("after the TTL: %d dry runs, want 2", n)
	}
	refuse = true
	if n := dryRuns(named("sweep-4", image("other:1"))); n != 2 {
		t.Errorf("refused pods: %d dry runs, want 2", n)
	}
	if n := dryRuns(named("sweep-5", image("other:1"))); n != 2 {
		t.Errorf("pods refused before are judged again: %d dry runs, want 2", n)
	}
}

// BenchmarkAcceptedPodsKey is the CPU a create spends on each replica
// type's key.
func BenchmarkAcceptedPodsKey(b *testing.B) {
	c := newAcceptedPods(clock.RealClock{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist-worker-0", Labels: map[string]string{"job-name": "mnist", "replica-type": "worker"}},
		Spec: corev1.PodSpec{Subdomain: "mnist", Containers: []corev1.Container{{
			Name: "tensorflow", Image: "tf:2", Command: []string{"python", "train.py"},
			Env: []corev1.EnvVar{{Name: "TF_CONFIG", Value: `{"cluster":{"chief":["mnist-chief-0.mnist.vision.svc:2222"],"worker":["mnist-worker-0.mnist.vision.svc:2222"]}}`}},
		}}},
	}
	b.ReportAllocs()
	for range b.N {
		if _, ok := c.key("vision", &metav1.ObjectMeta{Name: "mnist", UID: "uid-1"}, pod); !ok {
			b.Fatal("no key")
		}
	}
}

// TestAddressesTooLargeAreTheClientsToFix: a job whose replicas' addresses
// would not fit in a container's variable is refused with a 422 that names
// the replica specs, not a 500, and nothing is dry-run.
func TestAddressesTooLargeAreTheClientsToFix(t *testing.T) {
	client := fake.NewClientset()
	plugin := &podValidation{Handler: admission.NewHandler(admission.Create, admission.Update), client: client,
		accepted: newAcceptedPods(clocktesting.NewFakeClock(time.Now()))}
	job := newTFJob(t, 999)
	job.Name, job.Namespace = strings.Repeat("j", 63), strings.Repeat("n", 63)
	err := plugin.Validate(context.Background(), attributes(job, nil, admission.Create, ""), objectInterfaces())
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 422 {
		t.Fatalf("refused with %v, want a 422", err)
	}
	if causes := status.Status().Details.Causes; len(causes) != 1 || causes[0].Field != "spec.replicaSpecs" ||
		!strings.Contains(causes[0].Message, "TENSORSTACK_TF_CLUSTER") {
		t.Errorf("causes %+v, want one on spec.replicaSpecs naming the variable", causes)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("%d dry runs of pods that cannot start", n)
	}
}
