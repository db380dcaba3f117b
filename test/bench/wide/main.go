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
// bench-wide): how long a job of every kind, of one leader and pods-1
// workers, takes until every pod exists, next to an Indexed Job of as many
// pods, kube-controller-manager's, on the same stack (the floor), a bare
// ReplicaSet, and the peers: Kubeflow's PyTorchJob of the same shape under
// training-operator, and a JobSet of a leader Job and an Indexed Job of the
// workers; the status writes, the largest status, the controller's CPU and
// what the pods take in etcd.
//
//	bench-wide run -workloads indexed-job,pytorch,...|training-operator|jobset -json FILE
//	    runs the workloads one after the other and saves their results
//	bench-wide report -out FILE.md FILE.json...
//	    prints the results of every run as one markdown table
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// namespace holds the benchmark's objects.
const namespace = "bench-wide"

// The workloads. The first to run is the table's floor.
const (
	workloadIndexedJob = "indexed-job"
	workloadReplicaSet = "replicaset"
	workloadPyTorch    = "pytorch"
	workloadTensorFlow = "tensorflow"
	workloadXGBoost    = "xgboost"
	workloadGeneric    = "generic"
	workloadMPI        = "mpi"
	workloadPeer       = "training-operator"
	workloadJobSet     = "jobset"
)

// defaultWorkloads: the floor, then every kind.
var defaultWorkloads = []string{workloadIndexedJob, workloadReplicaSet, workloadPyTorch, workloadTensorFlow,
	workloadXGBoost, workloadGeneric, workloadMPI}

type options struct {
	localDir  string
	pods      int
	settle    time.Duration
	timeout   time.Duration
	workloads []string
	// rounds is how many times the workloads run, one after the other in
	// each round: a single run of a few seconds varies by a quarter.
	rounds int
	// controllerPid is the peer controller's process, which the stack
	// does not know.
	controllerPid int
	json          string
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCommand(os.Args[2:])
	case "report":
		err = reportCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-wide %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench-wide run|report [flags] (see docs/benchmarks.md)")
	os.Exit(2)
}

func runCommand(args []string) error {
	var o options
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	fs.StringVar(&o.localDir, "local-dir", "", "the local stack's directory (_output/local)")
	fs.IntVar(&o.pods, "pods", benchkit.IntEnv("BENCH_PODS", 1000), "pods of each workload")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "how long after the last pod exists its status writes are still counted")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up waiting for the pods after this long")
	workloads := fs.String("workloads", strings.Join(defaultWorkloads, ","),
		"comma-separated, run in this order: any of "+strings.Join(defaultWorkloads, ", ")+", "+workloadPeer+", "+workloadJobSet)
	fs.IntVar(&o.rounds, "rounds", benchkit.IntEnv("BENCH_ROUNDS", 3), "rounds of the workloads; the table shows each figure's median")
	fs.IntVar(&o.controllerPid, "controller-pid", 0, "the process of the peer, training-operator or JobSet (for its CPU)")
	fs.StringVar(&o.json, "json", "", "save the results to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.workloads = strings.Split(*workloads, ",")
	if o.json == "" {
		return errors.New("-json is required")
	}
	if o.rounds < 1 || o.pods < 1 {
		return fmt.Errorf("-rounds (%d) and -pods (%d) must be 1 or more", o.rounds, o.pods)
	}
	results, err := run(o)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.json, data, 0o644)
}

func reportCommand(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	out := fs.String("out", "", "also write the table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var all []*result
	for _, name := range fs.Args() {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var results []*result
		if err := json.Unmarshal(data, &results); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, results...)
	}
	var sb strings.Builder
	if err := writeTable(&sb, all); err != nil {
		return err
	}
	fmt.Print(sb.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(sb.String()), 0o644)
	}
	return nil
}

// bench holds the stack and its clients.
type bench struct {
	o        options
	stack    *benchkit.Stack
	kube     kubernetes.Interface
	training clientset.Interface
	dynamic  dynamic.Interface
	// trainingMetrics and kubeMetrics read the /metrics of the
	// training-apiserver and of kube-apiserver.
	trainingMetrics rest.Interface
	kubeMetrics     rest.Interface
}

func run(o options) ([]*result, error) {
	stack, err := benchkit.LoadStack(o.localDir)
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, stack: stack}
	admin, err := stack.AdminConfig()
	if err != nil {
		return nil, err
	}
	benchkit.Unthrottled(admin)
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return nil, err
	}
	if b.training, err = clientset.NewForConfig(admin); err != nil {
		return nil, err
	}
	if b.dynamic, err = dynamic.NewForConfig(admin); err != nil {
		return nil, err
	}
	direct, err := stack.DirectTrainingConfig()
	if err != nil {
		return nil, err
	}
	directKube, err := kubernetes.NewForConfig(direct)
	if err != nil {
		return nil, err
	}
	b.trainingMetrics = directKube.Discovery().RESTClient()
	b.kubeMetrics = b.kube.Discovery().RESTClient()
	ctx := context.Background()
	if err := benchkit.EnsureNamespace(ctx, b.kube, namespace); err != nil {
		return nil, err
	}
	var results []*result
	for round := 1; round <= o.rounds; round++ {
		for _, w := range o.workloads {
			benchkit.Logf("round %d of %d: %s", round, o.rounds, w)
			var r *result
			switch w {
			case workloadIndexedJob:
				r, err = b.runIndexedJob(ctx)
			case workloadReplicaSet:
				r, err = b.runReplicaSet(ctx)
			case workloadPeer:
				r, err = b.runPeerJob(ctx)
			case workloadJobSet:
				r, err = b.runJobSet(ctx)
			default:
				r, err = b.runJob(ctx, w)
			}
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		}
	}
	return results, nil
}
