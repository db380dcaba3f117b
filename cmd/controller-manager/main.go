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
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection" // leader election metrics
	_ "k8s.io/component-base/metrics/prometheus/restclient"              // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"               // workqueue metrics
	"k8s.io/klog/v2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"tensorstack.dev/training/pkg/controller"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/controller/kueue"
	tuningcontroller "tensorstack.dev/training/pkg/controller/tuning"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	jobinformers "tensorstack.dev/training/pkg/generated/informers/externalversions"
	"tensorstack.dev/training/pkg/serverflags"
	"tensorstack.dev/training/pkg/version"
)

const component = "training-controller-manager"

func main() {
	os.Exit(run(os.Args[1:]))
}

// run parses the flags and runs the controller until SIGINT or SIGTERM. It
// returns the process exit code.
func run(args []string) int {
	opts := newOptions()
	common := serverflags.New(component)
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	opts.addFlags(fs)
	common.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if exit, err := common.Apply(os.Stdout); exit || err != nil {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", component, err)
		return 2
	}
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := klog.Background().WithName(component)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting", "version", version.Get())

	if err := runManager(ctx, opts); err != nil {
		logger.Error(err, "Controller manager failed")
		return 1
	}
	logger.Info("Stopped")
	return 0
}

// protobufConfig asks for protobuf, which kube-apiserver serves for every
// built-in type: smaller on the wire and cheaper to decode than JSON, for
// the pods the controller watches and writes most. Clients of custom
// resources (the dynamic client) keep JSON, as they must.
func protobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// runManager runs the controller until ctx ends: its clients, the
// controller with the integrations the cluster offers, the metrics and
// health endpoints, then the controller itself, under leader election when
// asked.
func runManager(ctx context.Context, opts *options) error {
	logger := klog.FromContext(ctx)
	c, err := newClients(opts)
	if err != nil {
		return err
	}
	ctrl, err := newController(ctx, logger, opts, c)
	if err != nil {
		return err
	}
	var (
		leading  atomic.Bool
		watchdog *leaderelection.HealthzAdaptor
	)
	if opts.leaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	servers := &httpServers{logger: logger}
	defer servers.shutdown()
	metrics, err := newMetricsEndpoint(ctx, logger, opts, c.unfenced)
	if err != nil {
		return err
	}
	if err := servers.serve("metrics", opts.metricsAddr, metrics.handler, metrics.tls); err != nil {
		return err
	}
	if err := servers.serve("health probes", opts.healthAddr, healthHandler(opts.leaderElect, &leading, watchdog, ctrl.HasSynced), nil); err != nil {
		return err
	}
	startServingCert(ctx, logger, opts, c)
	startEtcdCerts(ctx, logger, opts, c)
	if !opts.leaderElect {
		ctrl.run(ctx)
		return nil
	}
	return runElected(ctx, logger, opts, c, ctrl.run, watchdog, &leading)
}

// clients are the manager's API clients. With leader election, every
// client but the lease's writes only while the lease is surely held
// (fence.go).
type clients struct {
	config *rest.Config // fenced when electing
	base   *rest.Config // never fenced: for what every replica does
	kube   kubernetes.Interface
	jobs   versioned.Interface
	// unfenced writes the lease and asks the access reviews, which are
	// writes too.
	unfenced kubernetes.Interface
	fence    *writeFence
}

func newClients(opts *options) (*clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = opts.kubeAPIQPS, opts.kubeAPIBurst
	cfg = rest.AddUserAgent(cfg, component+"/"+version.Get())
	c := &clients{config: cfg, base: cfg}
	if c.unfenced, err = kubernetes.NewForConfig(protobufConfig(cfg)); err != nil {
		return nil, fmt.Errorf("building the unfenced client: %w", err)
	}
	if opts.leaderElect {
		c.fence = newWriteFence(opts.renewDeadline)
		c.config = rest.CopyConfig(cfg)
		c.config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return fencedTransport{fence: c.fence, next: rt} })
	}
	if c.kube, err = kubernetes.NewForConfig(protobufConfig(c.config)); err != nil {
		return nil, fmt.Errorf("building kubernetes client: %w", err)
	}
	if c.jobs, err = versioned.NewForConfig(c.config); err != nil {
		return nil, fmt.Errorf("building training job client: %w", err)
	}
	return c, nil
}

// managedController is the controller with the informer factories it
// reads from, which run while it does.
type managedController struct {
	*controller.Controller
	// tuning runs the searches, beside the jobs, on informers of its own.
	tuning        *tuningcontroller.Controller
	kubeInformers informers.SharedInformerFactory
	jobInformers  jobinformers.SharedInformerFactory
	dynamic       dynamicinformer.DynamicSharedInformerFactory // nil without coscheduling
	workers       int
}

// HasSynced says whether the caches of the jobs' controller and of the
// searches' have synced.
func (m *managedController) HasSynced() bool {
	return m.Controller.HasSynced() && m.tuning.HasSynced()
}

// newController resolves the gang scheduler and the queueing system the
// cluster offers, and builds the controller on them.
func newController(ctx context.Context, logger klog.Logger, opts *options, c *clients) (*managedController, error) {
	ctrlOpts := controller.Options{
		ClusterDomain:       opts.clusterDomain,
		RestartBackoff:      controller.RestartBackoff{Base: opts.restartBackoffBase, Max: opts.restartBackoffMax},
		PodEventBatchPeriod: opts.podEventBatchPeriod,
	}
	gangScheduler, err := gang.Resolve(ctx, c.kube.Discovery(), opts.gangBackend)
	if err != nil {
		return nil, fmt.Errorf("choosing the gang scheduler: %w", err)
	}
	logger.Info("Gang scheduling", "requested", opts.gangBackend, "backend", gangScheduler)
	m := &managedController{
		kubeInformers: controller.NewKubeInformerFactory(c.kube, 0),
		jobInformers:  controller.NewJobInformerFactory(c.jobs, opts.jobResync),
		workers:       opts.concurrentSyncs,
	}
	// Coscheduling's PodGroups are a CRD, served through the dynamic
	// client; Kueue's Workloads through Kueue's own clientset.
	var dynamicClient dynamic.Interface
	if gangScheduler == gang.SchedulerCoscheduling {
		if dynamicClient, err = dynamic.NewForConfig(c.config); err != nil {
			return nil, fmt.Errorf("building dynamic client: %w", err)
		}
		m.dynamic = controller.NewDynamicInformerFactory(dynamicClient, 0)
	}
	ctrlOpts.Gang, err = gang.New(gangScheduler, gang.Config{
		KubeClient:                c.kube,
		KubeInformers:             m.kubeInformers,
		DynamicClient:             dynamicClient,
		DynamicInformers:          m.dynamic,
		CoschedulingSchedulerName: opts.coschedulingSchedulerName,
	})
	if err != nil {
		return nil, err
	}
	if ctrlOpts.Queueing, err = newQueueingGate(opts, c); err != nil {
		return nil, err
	}
	ctrlOpts.KueueManagement = opts.kueueManagement
	if m.Controller, err = controller.New(ctx, c.kube, c.jobs, m.kubeInformers, m.jobInformers, ctrlOpts); err != nil {
		return nil, err
	}
	if m.tuning, err = tuningcontroller.New(ctx, c.kube, c.jobs); err != nil {
		return nil, err
	}
	controller.RegisterMetrics()
	legacyregistry.CustomMustRegister(m.JobsCollector(), m.JobSeriesCollector(), m.tuning.Collector())
	return m, nil
}

// newQueueingGate builds what decides, while the controller runs, whether
// jobs are queued with Kueue: --queueing=none decides once.
func newQueueingGate(opts *options, c *clients) (*kueue.Gate, error) {
	if opts.queueingSystem == kueue.QueueingNone {
		return kueue.DisabledGate("the controller runs with --queueing=none"), nil
	}
	kueueClient, err := kueueclient.NewForConfig(c.config)
	if err != nil {
		return nil, fmt.Errorf("building Kueue client: %w", err)
	}
	reviews := c.unfenced.AuthorizationV1().SelfSubjectAccessReviews()
	return kueue.NewGate(kueue.GateConfig{
		Probe: func(ctx context.Context) kueue.Availability {
			return kueue.Probe(ctx, c.kube.Discovery(), reviews)
		},
		NewQueue:      func() *kueue.Queue { return kueue.New(kueueClient, 0) },
		RecheckPeriod: opts.queueingRecheckPeriod,
	}), nil
}

// run starts the informers, reconciles until ctx ends, and stops them.
func (m *managedController) run(ctx context.Context) {
	m.kubeInformers.Start(ctx.Done())
	m.jobInformers.Start(ctx.Done())
	if m.dynamic != nil {
		m.dynamic.Start(ctx.Done())
	}
	tuningDone := make(chan struct{})
	go func() {
		defer close(tuningDone)
		m.tuning.Run(ctx, max(1, m.workers/4))
	}()
	m.Run(ctx, m.workers)
	<-tuningDone
	m.kubeInformers.Shutdown()
	m.jobInformers.Shutdown()
	if m.dynamic != nil {
		m.dynamic.Shutdown()
	}
}

// healthHandler serves /healthz (the leader election watchdog, when
// electing), /livez and /readyz: a standby replica is ready to take over,
// the leader once its caches are filled.
func healthHandler(electing bool, leading *atomic.Bool, watchdog *leaderelection.HealthzAdaptor, synced func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if watchdog != nil {
			if err := watchdog.Check(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if electing && !leading.Load() {
			_, _ = w.Write([]byte("ok: standby"))
			return
		}
		if !synced() {
			http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

// httpServers are the manager's endpoints, shut down together.
type httpServers struct {
	logger  klog.Logger
	servers []*http.Server
}

// serve listens on addr ("" or "0" for not at all) and serves h there,
// over TLS when tlsConfig is not nil.
func (s *httpServers) serve(name, addr string, h http.Handler, tlsConfig *tls.Config) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for %s on %s: %w", name, addr, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig}
	s.servers = append(s.servers, srv)
	s.logger.Info("Serving", "endpoint", name, "address", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error(err, "HTTP server stopped", "endpoint", name)
		}
	}()
	return nil
}

func (s *httpServers) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		_ = srv.Shutdown(ctx)
	}
}

// runElected runs the controller while this replica holds the lease.
func runElected(ctx context.Context, logger klog.Logger, opts *options, c *clients, runController func(context.Context),
	watchdog *leaderelection.HealthzAdaptor, leading *atomic.Bool) error {
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("getting hostname for the leader election identity: %w", err)
	}
	identity := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.leaderElectNamespace, opts.leaderElectID,
		c.unfenced.CoreV1(), c.unfenced.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}
	election := leaderElection{
		lock: lock, name: opts.leaderElectID, watchdog: watchdog, leading: leading, fence: c.fence,
		leaseDuration: opts.leaseDuration, renewDeadline: opts.renewDeadline, retryPeriod: opts.retryPeriod,
	}
	if err := election.run(ctx, logger, runController); err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	return nil
}
