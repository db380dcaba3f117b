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

// Package framework starts the training apiserver in-process on a real
// embedded etcd for integration tests and benchmarks.
package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	restclient "k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/apiserver"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// TestServer is a running in-process apiserver.
type TestServer struct {
	// Config reaches the server as a privileged loopback client.
	Config *restclient.Config
	// Client is the generated clientset on Config.
	Client clientset.Interface
	// EtcdDir holds the embedded etcd's data; start another server on it to
	// see what survives a restart.
	EtcdDir string

	etcdURL string
	tb      testing.TB
	cancel  context.CancelFunc
	done    chan error
}

// StartTestServer starts a server whose embedded etcd keeps its data in
// etcdDir (a fresh t.TempDir() when empty) and waits until it is ready. The
// server is stopped when the test ends, or earlier by Stop.
func StartTestServer(tb testing.TB, etcdDir string) *TestServer {
	tb.Helper()
	return StartTestServerWith(tb, etcdDir, nil)
}

// StartTestServerWith is StartTestServer with configure given the server's
// configuration before the server is built, for a test that needs, say, an
// admission chain of its own. A nil configure changes nothing.
func StartTestServerWith(tb testing.TB, etcdDir string, configure func(*apiserver.Config)) *TestServer {
	tb.Helper()
	if etcdDir == "" {
		etcdDir = tb.TempDir()
	}
	options := apiserver.NewOptions()
	options.EmbeddedEtcdDir = etcdDir
	standalone(options.RecommendedOptions)

	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		tb.Fatalf("listening: %v", err)
	}
	options.RecommendedOptions.SecureServing.Listener = listener
	options.RecommendedOptions.SecureServing.BindPort = port
	options.RecommendedOptions.SecureServing.ServerCert.CertDirectory = tb.TempDir()

	if err := options.Validate(); err != nil {
		tb.Fatalf("validating options: %v", err)
	}
	config, err := options.Config()
	if err != nil {
		tb.Fatalf("configuring server: %v", err)
	}
	if configure != nil {
		configure(config)
	}
	server, err := config.Complete().New()
	if err != nil {
		tb.Fatalf("building server: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s := &TestServer{EtcdDir: etcdDir, etcdURL: config.EmbeddedEtcd.ClientURL, tb: tb, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- server.Run(ctx) }()
	tb.Cleanup(s.Stop)

	s.Config = restclient.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)
	s.Config.QPS, s.Config.Burst = -1, 0 // no client-side throttling in tests
	if err := s.waitReady(); err != nil {
		tb.Fatal(err)
	}
	if s.Client, err = clientset.NewForConfig(s.Config); err != nil {
		tb.Fatal(err)
	}
	return s
}

// EtcdClient connects to the server's etcd, for a test that reads or writes
// the stored bytes themselves. The client is closed when the test ends.
func (s *TestServer) EtcdClient() *clientv3.Client {
	s.tb.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{s.etcdURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		s.tb.Fatalf("connecting to etcd: %v", err)
	}
	s.tb.Cleanup(func() { _ = client.Close() })
	return client
}

// standalone turns off what needs a kube-apiserver: delegated authentication
// and authorization, admission plugins that watch core resources, and
// priority and fairness. The loopback client stays fully privileged.
func standalone(o *genericoptions.RecommendedOptions) {
	o.Authentication = nil
	o.Authorization = nil
	o.CoreAPI = nil
	o.Admission = nil
	o.Features.EnablePriorityAndFairness = false
}

func (s *TestServer) waitReady() error {
	client, err := restclient.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	url := s.Config.Host + "/readyz"
	var last string
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer func() { _ = resp.Body.Close() }()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("server not ready: %s: %w", last, err)
	}
	return nil
}

// Stop shuts the server and its etcd down and waits until both are gone, so
// the etcd directory can be reused. Calling it again does nothing.
func (s *TestServer) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			s.tb.Errorf("server stopped with error: %v", err)
		}
	case <-time.After(time.Minute):
		s.tb.Errorf("server did not stop within a minute")
	}
}
