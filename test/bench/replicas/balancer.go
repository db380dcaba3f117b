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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// balancer stands in for a Service's virtual IP in front of the replicas:
// like kube-proxy it spreads TCP connections, not requests, taking the
// backends in turn. TLS passes through it untouched.
type balancer struct {
	listener net.Listener
	mu       sync.Mutex
	backends []int // ports on 127.0.0.1
	next     int
	conns    map[int]int64 // connections given to each backend port
	open     map[net.Conn]struct{}
}

func newBalancer(port int) (*balancer, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	b := &balancer{listener: l, conns: map[int]int64{}, open: map[net.Conn]struct{}{}}
	go b.serve()
	return b, nil
}

// setBackends replaces the backends and closes every open connection, so
// that clients connect again and each measurement starts with fresh
// connections spread over the new backends.
func (b *balancer) setBackends(ports ...int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = ports
	b.next = 0
	for c := range b.open {
		_ = c.Close()
	}
}

// connections is how many connections went to the backend on port so far.
func (b *balancer) connections(port int) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns[port]
}

func (b *balancer) pick() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.backends) == 0 {
		return 0, errors.New("no backends")
	}
	p := b.backends[b.next%len(b.backends)]
	b.next++
	b.conns[p]++
	return p, nil
}

func (b *balancer) serve() {
	for {
		c, err := b.listener.Accept()
		if err != nil {
			return
		}
		go b.forward(c)
	}
}

func (b *balancer) forward(c net.Conn) {
	defer c.Close()
	port, err := b.pick()
	if err != nil {
		return
	}
	up, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	b.track(c, up)
	defer b.untrack(c, up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func (b *balancer) track(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		b.open[c] = struct{}{}
	}
}

func (b *balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.open, c)
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (b *balancer) close() {
	_ = b.listener.Close()
}

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

const (
	apiServiceName   = "v1beta1.batch.tensorstack.dev"
	serviceNamespace = "tensorstack-system"
	serviceName      = "training-apiserver"
)

// routeAPIService points the APIService (and the ExternalName Service it
// names) at port on this machine, and waits until kube-apiserver serves
// the group from there.
func routeAPIService(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, port int, served func(context.Context) error) error {
	svc, err := kube.CoreV1().Services(serviceNamespace).Get(ctx, serviceName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(svc.Spec.Ports) != 1 {
		return fmt.Errorf("service %s/%s has %d ports, want 1", serviceNamespace, serviceName, len(svc.Spec.Ports))
	}
	svc.Spec.Ports[0].Port = int32(port)
	svc.Spec.Ports[0].TargetPort.IntVal = int32(port)
	if _, err := kube.CoreV1().Services(serviceNamespace).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"service":{"port":%d}}}`, port)
	if _, err := dyn.Resource(apiServiceResource).Patch(ctx, apiServiceName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(apiServiceResource).Get(ctx, apiServiceName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return available(u.Object) && served(ctx) == nil, nil
	})
}

func available(obj map[string]interface{}) bool {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if ok && m["type"] == "Available" && m["status"] == "True" {
			return true
		}
	}
	return false
}
