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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	restclient "k8s.io/client-go/rest"

	"tensorstack.dev/training/internal/skips"
	"tensorstack.dev/training/pkg/apiserver"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// etcdOutageBound is how long a request may take to answer while etcd is
// unreachable.
const etcdOutageBound = 30 * time.Second

// TestEtcdUnreachableAnswersInBoundedTime stops (SIGSTOP) the external etcd
// the server uses, so that its connections stay open but nothing answers,
// as with a partitioned or frozen etcd. A write must then answer 503 or 504
// within etcdOutageBound instead of hanging; reads are measured too. Once
// etcd continues, the server serves again.
func TestEtcdUnreachableAnswersInBoundedTime(t *testing.T) {
	etcd := startEtcdProcess(t)
	s := startExternalEtcdServer(t, etcd.clientURL)
	ctx := context.Background()
	jobs := s.client.BatchV1beta1().TensorFlowTrainingJobs("outage")
	tf := tensorflowKind(nil)
	existing, err := jobs.Create(ctx, tf.newJob("before"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a job with etcd up: %v", err)
	}

	etcd.signal(t, syscall.SIGSTOP)
	stopped := true
	t.Cleanup(func() {
		if stopped {
			etcd.signal(t, syscall.SIGCONT)
		}
	})

	type outcome struct {
		code     int32
		err      error
		duration time.Duration
	}
	// One request each, not retried: client-go would retry a 504 with
	// Retry-After by itself, up to ten times.
	rc := s.client.BatchV1beta1().RESTClient()
	updated := existing.DeepCopy()
	updated.Labels = map[string]string{"updated": "during-outage"}
	ops := []struct {
		name string
		do   func(context.Context) error
	}{
		{"CREATE", func(ctx context.Context) error {
			return rc.Post().Namespace("outage").Resource("tensorflowtrainingjobs").Body(tf.newJob("during")).MaxRetries(0).Do(ctx).Error()
		}},
		{"UPDATE", func(ctx context.Context) error {
			return rc.Put().Namespace("outage").Resource("tensorflowtrainingjobs").Name(existing.Name).Body(updated).MaxRetries(0).Do(ctx).Error()
		}},
		{"GET", func(ctx context.Context) error {
			return rc.Get().Namespace("outage").Resource("tensorflowtrainingjobs").Name(existing.Name).MaxRetries(0).Do(ctx).Error()
		}},
		{"LIST", func(ctx context.Context) error {
			return rc.Get().Namespace("outage").Resource("tensorflowtrainingjobs").MaxRetries(0).Do(ctx).Error()
		}},
		{"LIST resourceVersion=0", func(ctx context.Context) error {
			return rc.Get().Namespace("outage").Resource("tensorflowtrainingjobs").Param("resourceVersion", "0").MaxRetries(0).Do(ctx).Error()
		}},
	}
	outcomes := make([]outcome, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Well past the bound, to measure a server that has none.
			reqCtx, cancel := context.WithTimeout(ctx, 3*etcdOutageBound)
			defer cancel()
			begin := time.Now()
			err := op.do(reqCtx)
			outcomes[i] = outcome{code: statusCode(err), err: err, duration: time.Since(begin)}
		}()
	}
	wg.Wait()
	for i, op := range ops {
		o := outcomes[i]
		t.Logf("%s with etcd stopped: %d after %v: %v", op.name, o.code, o.duration.Round(10*time.Millisecond), o.err)
	}
	for i, op := range ops {
		o := outcomes[i]
		switch {
		case op.name == "CREATE" || op.name == "UPDATE":
			if (o.code != http.StatusServiceUnavailable && o.code != http.StatusGatewayTimeout) || o.duration > etcdOutageBound {
				t.Errorf("%s with etcd stopped: %d after %v, want 503 or 504 within %v", op.name, o.code, o.duration, etcdOutageBound)
			} else if _, retry := apierrors.SuggestsClientDelay(o.err); !retry {
				t.Errorf("%s with etcd stopped: %v, want a Retry-After", op.name, o.err)
			}
		default:
			// A read may be served from the watch cache: 200 is fine, and
			// better.
			if (o.code != http.StatusOK && o.code != http.StatusServiceUnavailable && o.code != http.StatusGatewayTimeout) || o.duration > etcdOutageBound {
				t.Errorf("%s with etcd stopped: %d after %v, want 200, 503 or 504 within %v", op.name, o.code, o.duration, etcdOutageBound)
			}
		}
	}

	etcd.signal(t, syscall.SIGCONT)
	stopped = false
	begin := time.Now()
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, last = jobs.Create(reqCtx, tf.newJob("after"), metav1.CreateOptions{})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		t.Fatalf("the server did not serve again within a minute of etcd continuing: %v", last)
	}
	t.Logf("serving again %v after etcd continued", time.Since(begin).Round(10*time.Millisecond))
	if _, err := jobs.Get(ctx, "during", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("GET after the outage: %v", err)
	}
}

// statusCode is the HTTP status of a client error, 200 for none.
func statusCode(err error) int32 {
	if err == nil {
		return http.StatusOK
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// etcdProcess is an etcd started from the binary hack/build-test-binaries.sh
// builds into _output/bin, or $TRAINING_ETCD_BIN.
type etcdProcess struct {
	cmd       *exec.Cmd
	clientURL string
}

func startEtcdProcess(t *testing.T) *etcdProcess {
	t.Helper()
	bin := os.Getenv("TRAINING_ETCD_BIN")
	if bin == "" {
		bin = filepath.Join("..", "..", "_output", "bin", "etcd")
	}
	if _, err := os.Stat(bin); err != nil {
		// make test-integration builds it first; CI may not skip this test.
		skips.Test(t, "test-integration", fmt.Sprintf("no etcd binary (%v): run hack/build-test-binaries.sh etcd or set TRAINING_ETCD_BIN", err))
	}
	clientURL := "http://" + freeLocalAddress(t)
	peerURL := "http://" + freeLocalAddress(t)
	cmd := exec.Command(bin,
		"--name=outage",
		"--data-dir="+filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=outage="+peerURL,
		"--log-level=error",
	)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
	})
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(clientURL + "/health")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("etcd not healthy within 30s: %v\n%s", err, log)
	}
	return &etcdProcess{cmd: cmd, clientURL: clientURL}
}

func (e *etcdProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := e.cmd.Process.Signal(sig); err != nil {
		t.Errorf("sending %v to etcd: %v", sig, err)
	}
	if sig == syscall.SIGSTOP {
		e.waitStopped(t)
	}
}

// waitStopped waits until every thread of etcd is stopped: kill returns
// before a thread running on another core has been interrupted, and on a
// busy machine etcd may still answer a request or two in that moment.
func (e *etcdProcess) waitStopped(t *testing.T) {
	t.Helper()
	tasks := fmt.Sprintf("/proc/%d/task", e.cmd.Process.Pid)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		entries, err := os.ReadDir(tasks)
		if err != nil {
			t.Fatalf("reading %s: %v", tasks, err)
		}
		stopped := 0
		for _, task := range entries {
			stat, err := os.ReadFile(filepath.Join(tasks, task.Name(), "stat"))
			// The state follows the command name in parentheses.
			if i := strings.LastIndexByte(string(stat), ')'); err == nil && i >= 0 && i+2 < len(stat) &&
				(stat[i+2] == 'T' || stat[i+2] == 't') {
				stopped++
			}
		}
		if stopped == len(entries) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("etcd's threads did not all stop within 5s")
}

// freeLocalAddress is a 127.0.0.1 address with a port that was free a moment
// ago.
func freeLocalAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// externalEtcdServer is a server on an external etcd.
type externalEtcdServer struct {
	config *restclient.Config
	client clientset.Interface
}

// startExternalEtcdServer starts a standalone server (no delegated
// authentication) on the etcd at etcdURL and waits until it is ready.
func startExternalEtcdServer(t *testing.T, etcdURL string, flags ...string) *externalEtcdServer {
	t.Helper()
	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	options := apiserver.NewOptions()
	fs := newFlagSet(options)
	if err := fs.Parse(append([]string{"--etcd-servers=" + etcdURL, "--embedded-etcd-dir="}, flags...)); err != nil {
		t.Fatal(err)
	}
	recommended := options.RecommendedOptions
	recommended.SecureServing.Listener = listener
	recommended.SecureServing.BindPort = port
	recommended.SecureServing.ServerCert.CertDirectory = t.TempDir()
	recommended.Authentication = nil
	recommended.Authorization = nil
	recommended.CoreAPI = nil
	recommended.Admission = nil
	recommended.Features.EnablePriorityAndFairness = false
	if err := options.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}
	config, err := options.Config()
	if err != nil {
		t.Fatalf("configuring server: %v", err)
	}
	server, err := config.Complete().New()
	if err != nil {
		t.Fatalf("building server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("server stopped with error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("server did not stop within a minute")
		}
	})

	s := &externalEtcdServer{config: restclient.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)}
	s.config.QPS, s.config.Burst = -1, 0
	httpClient, err := restclient.HTTPClientFor(s.config)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := httpClient.Get(s.config.Host + "/readyz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("server not ready: %v", err)
	}
	if s.client, err = clientset.NewForConfig(s.config); err != nil {
		t.Fatal(err)
	}
	return s
}

// newFlagSet is the server's command-line flags on options.
func newFlagSet(options *apiserver.Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("training-apiserver", pflag.ContinueOnError)
	options.AddFlags(fs)
	return fs
}
