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

// Command bench-wide measures one wide job on the running local stack (make
// bench-wide): how long a PyTorchTrainingJob of one master and pods-1
// workers takes until every pod exists, next to a bare ReplicaSet of as
// many pods, kube-controller-manager's, on the same stack (the floor); the
// status writes, the largest status and the controller's CPU. It prints a
// markdown table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// namespace holds the benchmark's objects.
const namespace = "bench-wide"

type options struct {
	localDir string
	pods     int
	settle   time.Duration
	timeout  time.Duration
	out      string
}

func main() {
	var o options
	flag.StringVar(&o.localDir, "local-dir", "", "the local stack's directory (_output/local)")
	flag.IntVar(&o.pods, "pods", benchkit.IntEnv("BENCH_PODS", 1000), "pods of the job and of the ReplicaSet")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "how long after the last pod exists its status writes are still counted")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up waiting for the pods after this long")
	flag.StringVar(&o.out, "out", "", "also write the table to this file")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-wide:", err)
		os.Exit(1)
	}
}

// bench holds the stack and its clients.
type bench struct {
	o        options
	stack    *benchkit.Stack
	kube     kubernetes.Interface
	training clientset.Interface
	// trainingMetrics and kubeMetrics read the /metrics of the
	// training-apiserver and of kube-apiserver.
	trainingMetrics rest.Interface
	kubeMetrics     rest.Interface
}

func run(o options) error {
	stack, err := benchkit.LoadStack(o.localDir)
	if err != nil {
		return err
	}
	b := &bench{o: o, stack: stack}
	admin, err := stack.AdminConfig()
	if err != nil {
		return err
	}
	benchkit.Unthrottled(admin)
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return err
	}
	if b.training, err = clientset.NewForConfig(admin); err != nil {
		return err
	}
	direct, err := stack.DirectTrainingConfig()
	if err != nil {
		return err
	}
	directKube, err := kubernetes.NewForConfig(direct)
	if err != nil {
		return err
	}
	b.trainingMetrics = directKube.Discovery().RESTClient()
	b.kubeMetrics = b.kube.Discovery().RESTClient()

	ctx := context.Background()
	if err := b.freshNamespace(ctx); err != nil {
		return err
	}
	floor, err := b.runReplicaSet(ctx)
	if err != nil {
		return err
	}
	ours, err := b.runJob(ctx)
	if err != nil {
		return err
	}
	var sb strings.Builder
	writeTable(&sb, o, floor, ours)
	fmt.Print(sb.String())
	if o.out != "" {
		return os.WriteFile(o.out, []byte(sb.String()), 0o644)
	}
	return nil
}
