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

// Command api is the API benchmark of make bench-api (hack/bench-api.sh),
// run against the local control plane: the same jobs (chief 1, ps 1,
// worker 3; paused, so no pod is made) created, listed and deleted through
//
//   - Kubeflow's TFJob CustomResourceDefinition (training-operator v1.9.4),
//     served by kube-apiserver itself;
//   - our TensorFlowTrainingJob through kube-apiserver, which proxies it to
//     the training-apiserver (the aggregator);
//   - our TensorFlowTrainingJob straight from the training-apiserver's port.
//
// It prints a markdown table: creates/s at a fixed concurrency, create
// latency p50/p99, the time of a full LIST read raw and decoded by
// client-go, deletes/s, and ours/CRD ratios. See docs/benchmarks.md.
package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// target is one way to reach the jobs.
type target struct {
	key       string // crd, aggregated, direct
	title     string
	namespace string
	kube      kubernetes.Interface
	// raw reads the collection as plain HTTP: base URL and client.
	rawHost   string
	rawClient *http.Client
	listPath  string
	create    func(ctx context.Context, name string) error
	delete    func(ctx context.Context, name string) error
	// list decodes the collection the way a Go client of this resource
	// would: the typed clientset for ours, the dynamic client for the CRD.
	list     func(ctx context.Context) (int, error)
	listHow  string
	listSeen *seen
	// listJSON is the typed clientset told to use JSON (ours only).
	listJSON func(ctx context.Context) (int, error)
	jsonSeen *seen
	// listDynamic decodes into unstructured objects, the same for all.
	listDynamic func(ctx context.Context) (int, error)
	createSeen  *seen
}

// seen records the content types a client sent and received.
type seen struct {
	mu       sync.Mutex
	request  string
	response string
}

func (s *seen) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recorder{rt: rt, s: s} })
}

func (s *seen) get() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.request, s.response
}

type recorder struct {
	rt http.RoundTripper
	s  *seen
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if ct := req.Header.Get("Content-Type"); ct != "" {
		r.s.request = ct
	}
	if err == nil {
		if ct := resp.Header.Get("Content-Type"); ct != "" {
			r.s.response = ct
		}
	}
	return resp, err
}

func newTargets(stack *benchkit.Stack, keys []string) ([]*target, error) {
	admin, err := stack.AdminConfig()
	if err != nil {
		return nil, err
	}
	direct, err := stack.DirectTrainingConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	var out []*target
	for _, key := range keys {
		var t *target
		switch strings.TrimSpace(key) {
		case "crd":
			t, err = crdTarget(admin)
		case "aggregated":
			t, err = ourTarget("aggregated", "ours via kube-apiserver (aggregated)", admin)
		case "direct":
			t, err = ourTarget("direct", "ours direct to training-apiserver", direct)
		default:
			err = fmt.Errorf("unknown target %q (crd, aggregated, direct)", key)
		}
		if err != nil {
			return nil, err
		}
		t.namespace = "bench-api-" + t.key
		t.kube = kube
		out = append(out, t)
	}
	return out, nil
}

func rawClient(cfg *rest.Config) (*http.Client, error) {
	return rest.HTTPClientFor(rest.CopyConfig(cfg))
}

func crdTarget(admin *rest.Config) (*target, error) {
	t := &target{key: "crd", title: "CRD (Kubeflow TFJob) via kube-apiserver", createSeen: &seen{}, listSeen: &seen{}}
	cfg := rest.CopyConfig(admin)
	t.createSeen.wrap(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	listCfg := rest.CopyConfig(admin)
	t.listSeen.wrap(listCfg)
	dynList, err := dynamic.NewForConfig(listCfg)
	if err != nil {
		return nil, err
	}
	if t.rawClient, err = rawClient(admin); err != nil {
		return nil, err
	}
	t.rawHost = admin.Host
	res := benchkit.TFJobResource
	t.listPath = fmt.Sprintf("/apis/%s/%s/namespaces/%%s/%s", res.Group, res.Version, res.Resource)
	t.create = func(ctx context.Context, name string) error {
		job, err := benchkit.KubeflowJob(t.namespace, name, benchkit.JobOptions{Paused: true})
		if err != nil {
			return err
		}
		_, err = dyn.Resource(res).Namespace(t.namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	}
	t.delete = func(ctx context.Context, name string) error {
		return dyn.Resource(res).Namespace(t.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.list = func(ctx context.Context) (int, error) {
		l, err := dynList.Resource(res).Namespace(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	t.listHow = "dynamic client (unstructured)"
	t.listDynamic = t.list
	return t, nil
}

func ourTarget(key, title string, base *rest.Config) (*target, error) {
	t := &target{key: key, title: title, createSeen: &seen{}, listSeen: &seen{}, jsonSeen: &seen{}}
	cfg := rest.CopyConfig(base)
	t.createSeen.wrap(cfg)
	typed, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	listCfg := rest.CopyConfig(base)
	t.listSeen.wrap(listCfg)
	typedList, err := clientset.NewForConfig(listCfg)
	if err != nil {
		return nil, err
	}
	jsonCfg := rest.CopyConfig(base)
	jsonCfg.ContentType = contentTypeJSON
	jsonCfg.AcceptContentTypes = contentTypeJSON
	t.jsonSeen.wrap(jsonCfg)
	typedJSON, err := clientset.NewForConfig(jsonCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(base))
	if err != nil {
		return nil, err
	}
	if t.rawClient, err = rawClient(base); err != nil {
		return nil, err
	}
	t.rawHost = base.Host
	res := benchkit.OurResource
	t.listPath = fmt.Sprintf("/apis/%s/%s/namespaces/%%s/%s", res.Group, res.Version, res.Resource)
	t.create = func(ctx context.Context, name string) error {
		job := benchkit.OurJob(t.namespace, name, benchkit.JobOptions{Paused: true})
		_, err := typed.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	}
	t.delete = func(ctx context.Context, name string) error {
		return typed.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.list = func(ctx context.Context) (int, error) {
		l, err := typedList.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	t.listHow = "typed clientset"
	t.listJSON = func(ctx context.Context) (int, error) {
		l, err := typedJSON.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	t.listDynamic = func(ctx context.Context) (int, error) {
		l, err := dyn.Resource(res).Namespace(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	return t, nil
}
