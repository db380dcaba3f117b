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

// Command bench-scale measures how the training-apiserver and the
// controller fare as history grows: with BENCH_JOBS jobs stored, most of
// them finished (BENCH_RUNNING of them running), it measures the
// training-apiserver (RSS, etcd size, a page of a paged LIST, a full LIST in
// protobuf, a new watch's initial events, a restart) and the controller
// (RSS against its RSS with no jobs, start-up, the time to its first pod
// create, CPU while idle). It prints markdown tables.
//
// The controller is stopped while the jobs are stored, so that it starts
// on the full history, as after an upgrade or a failover.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// namespace holds every job of the benchmark.
const namespace = "bench-scale"

type options struct {
	localDir  string
	jobs      int
	running   int
	pageSize  int64
	pages     int
	idle      time.Duration
	out       string
	restarter string
	// storageOnly stops after the training-apiserver's figures, leaving
	// the jobs stored and the controller stopped, for profiling.
	storageOnly bool
	// etcd is embedded or external: where the training-apiserver's data is.
	etcd string
	// crd also stores the history as Kubeflow TFJobs in kube-apiserver
	// and measures it the same way.
	crd bool
}

func main() {
	var o options
	flag.StringVar(&o.localDir, "local-dir", "", "the local stack's directory (_output/local)")
	flag.IntVar(&o.jobs, "jobs", benchkit.IntEnv("BENCH_JOBS", 100000), "jobs stored")
	flag.IntVar(&o.running, "running", benchkit.IntEnv("BENCH_RUNNING", 500), "of them, jobs running; the rest finished")
	flag.Int64Var(&o.pageSize, "page-size", 500, "items per page of the paged LIST")
	flag.IntVar(&o.pages, "pages", 200, "pages timed")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "how long the idle CPU is measured")
	flag.StringVar(&o.out, "out", "", "also write the tables to this file")
	flag.StringVar(&o.restarter, "restart", "hack/local-restart.sh", "the script that stops and starts a component")
	flag.BoolVar(&o.storageOnly, "storage-only", false, "stop after the training-apiserver's figures, the jobs left stored and the controller stopped (for profiling)")
	flag.StringVar(&o.etcd, "etcd", "embedded", "the training-apiserver's etcd: embedded, or external (the stack's etcd, shared with kube-apiserver)")
	flag.BoolVar(&o.crd, "crd", benchkit.BoolEnv("BENCH_CRD", true), "also measure Kubeflow's TFJob CRD in kube-apiserver on the same history (installed beforehand; not with -storage-only)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

// bench holds the stack and its clients.
type bench struct {
	o        options
	stack    *benchkit.Stack
	kube     kubernetes.Interface
	direct   clientset.Interface
	training clientset.Interface
	dynamic  dynamic.Interface
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
	direct, err := stack.DirectTrainingConfig()
	if err != nil {
		return err
	}
	direct.ContentType = "application/vnd.kubernetes.protobuf"
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return err
	}
	if b.training, err = clientset.NewForConfig(admin); err != nil {
		return err
	}
	if b.direct, err = clientset.NewForConfig(direct); err != nil {
		return err
	}
	if b.dynamic, err = dynamic.NewForConfig(admin); err != nil {
		return err
	}
	ctx := context.Background()

	empty, err := b.controllerSettledRSS()
	if err != nil {
		return err
	}
	if err := b.restart("--stop", "training-controller-manager"); err != nil {
		return err
	}
	ours := b.ourServer()
	storage := &storageResult{}
	if storage.rssEmpty, _, err = b.settledRSS(ours); err != nil {
		return err
	}
	fill, err := b.fill(ctx)
	if err != nil {
		return err
	}
	if err := b.measureStorage(ctx, ours, storage); err != nil {
		return err
	}
	var controller *controllerResult
	if !o.storageOnly {
		if controller, err = b.measureController(ctx, empty); err != nil {
			return err
		}
		if err := b.measureHistoryCost(ctx, controller); err != nil {
			return err
		}
	}
	var crdFill *fillResult
	var crd *storageResult
	if o.crd && !o.storageOnly {
		if crdFill, crd, err = b.measureCRD(ctx); err != nil {
			return err
		}
	}
	var sb strings.Builder
	writeTables(&sb, o, fill, storage, crdFill, crd, controller)
	fmt.Print(sb.String())
	if o.out != "" {
		return os.WriteFile(o.out, []byte(sb.String()), 0o644)
	}
	return nil
}

// restart runs hack/local-restart.sh with args, and returns how long it
// took; with no option it stops the component, starts it and waits until
// it is ready.
func (b *bench) restart(args ...string) error {
	_, err := b.timedRestart(args...)
	return err
}

func (b *bench) timedRestart(args ...string) (time.Duration, error) {
	cmd := exec.Command(b.o.restarter, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "LOCAL_DIR="+b.stack.Dir)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s %s: %w", b.o.restarter, strings.Join(args, " "), err)
	}
	return time.Since(start), nil
}

// ourJobs is our TensorFlowTrainingJobs read straight from the
// training-apiserver with the typed clientset, in protobuf.
type ourJobs struct {
	client clientset.Interface
}

func (c ourJobs) list(ctx context.Context, opts metav1.ListOptions) (int, string, error) {
	list, err := c.client.BatchV1beta1().TensorFlowTrainingJobs(namespace).List(ctx, opts)
	if err != nil {
		return 0, "", err
	}
	return len(list.Items), list.Continue, nil
}

func (c ourJobs) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.client.BatchV1beta1().TensorFlowTrainingJobs(namespace).Watch(ctx, opts)
}

// ourServer is the training-apiserver, on its embedded etcd or on the
// stack's, which holds kube-apiserver's objects too.
func (b *bench) ourServer() server {
	db := filepath.Join(b.stack.Dir, "training-etcd", "data", "member", "snap", "db")
	if b.o.etcd == "external" {
		db = b.stack.EtcdDB()
	}
	return server{component: "training-apiserver", jobs: ourJobs{client: b.direct}, etcdDB: db}
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
