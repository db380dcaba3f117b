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

package controller

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

const (
	benchJobs     = 500
	benchReplicas = 5 // per job: TF chief 1 + worker 3 + ps 1, PyTorch master 1 + worker 4
)

// benchJobsList returns 500 jobs of 5 replicas, half of each kind.
func benchJobsList() []v1beta1.TrainingJob {
	jobs := make([]v1beta1.TrainingJob, 0, benchJobs)
	for i := range benchJobs {
		name := fmt.Sprintf("job-%03d", i)
		if i%2 == 0 {
			jobs = append(jobs, newTFJob(name).withReplicas("chief", 1).withReplicas("worker", 3).withReplicas("ps", 1).obj())
		} else {
			jobs = append(jobs, newPyTorchJob(name).withReplicas("master", 1).withReplicas("worker", 4).obj())
		}
	}
	return jobs
}

func benchFixture(b *testing.B) (*fixture, []v1beta1.TrainingJob) {
	jobs := benchJobsList()
	objs := make([]runtime.Object, len(jobs))
	for i := range jobs {
		objs[i] = jobs[i]
	}
	return newQuietFixture(b, objs...), jobs
}

// BenchmarkReconcile reconciles 500 jobs of 5 replicas on fake clients.
//
//   - create: the first reconcile of each job, which creates its 5 pods and
//     its Service and writes its status;
//   - steady: a reconcile of a running job with nothing to do, the common
//     case, e.g. after every pod status update.
//
// reconciles/s counts syncJob calls per second of benchmark time; the fake
// clients' costs are included.
func BenchmarkReconcile(b *testing.B) {
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		reconciles := 0
		for b.Loop() {
			b.StopTimer()
			f, jobs := benchFixture(b)
			b.StartTimer()
			for _, job := range jobs {
				if _, err := f.sync(job); err != nil {
					b.Fatal(err)
				}
				reconciles++
			}
			b.StopTimer()
			if got := len(f.podNames()); got != benchJobs*benchReplicas {
				b.Fatalf("%d pods, want %d", got, benchJobs*benchReplicas)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(reconciles)/b.Elapsed().Seconds(), "reconciles/s")
		b.ReportMetric(0, "ns/op")
	})

	b.Run("steady", func(b *testing.B) {
		f, jobs := benchFixture(b)
		for _, job := range jobs {
			f.mustSync(job)
		}
		f.observe()
		f.setAll(running)
		for _, job := range jobs {
			f.mustSync(job)
		}
		f.observe()
		for _, job := range jobs {
			if st := f.status(job); st.Phase != v1beta1.JobRunning {
				b.Fatalf("job %s is %s, want Running", job.GetName(), st.Phase)
			}
		}
		f.kubeClient.ClearActions()
		f.jobClient.ClearActions()
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			if _, err := f.sync(jobs[i%len(jobs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "reconciles/s")
		if n := len(f.kubeClient.Actions()) + len(f.jobClient.Actions()); n != 0 {
			b.Fatalf("%d API calls in the steady state, want none", n)
		}
	})
}
