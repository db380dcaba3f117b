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
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/test/integration/framework"
)

// The benchmarks drive the in-process server on its embedded etcd through
// the generated clientset over loopback HTTPS, and report ops/s.

func BenchmarkCreate(b *testing.B) {
	s := framework.StartTestServer(b, "")
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("bench")
	ctx := context.Background()
	template := tensorflowKind(s).newJob("")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job := template.DeepCopy()
		job.Name = fmt.Sprintf("job-%d", i)
		if _, err := client.Create(ctx, job, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportOpsPerSecond(b)
}

func BenchmarkGet(b *testing.B) {
	s := framework.StartTestServer(b, "")
	populate(b, s, 1000)
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("bench")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := client.Get(ctx, fmt.Sprintf("job-%d", i%1000), metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportOpsPerSecond(b)
}

func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := framework.StartTestServer(b, "")
			populate(b, s, n)
			client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("bench")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				list, err := client.List(ctx, metav1.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if len(list.Items) != n {
					b.Fatalf("listed %d jobs, want %d", len(list.Items), n)
				}
			}
			reportOpsPerSecond(b)
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// populate creates n jobs job-0 … job-<n-1> with a few concurrent writers.
func populate(b *testing.B, s *framework.TestServer, n int) {
	b.Helper()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("bench")
	template := tensorflowKind(s).newJob("")
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				job := template.DeepCopy()
				job.Name = fmt.Sprintf("job-%d", i)
				if _, err := client.Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("populating: %v", err)
	}
}

func reportOpsPerSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
