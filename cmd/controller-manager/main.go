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
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection" // leader election metrics
	_ "k8s.io/component-base/metrics/prometheus/restclient"              // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"               // workqueue metrics
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/controller"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
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
	logging := logsapi.NewLoggingConfiguration()
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	opts.addFlags(fs)
	logsapi.AddFlags(logging, fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if opts.showVersion {
		fmt.Println(version.String(component))
		return 0
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", component, err)
		return 2
	}
	if err := logsapi.ValidateAndApply(logging, nil); err != nil {
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

func runManager(ctx context.Context, opts *options) error {
	logger := klog.FromContext(ctx)
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = opts.kubeAPIQPS, opts.kubeAPIBurst
	cfg = rest.AddUserAgent(cfg, component+"/"+version.Get())
	// With leader election, the controller's clients write only while the
	// lease is surely held (fence.go); the lease itself goes through cfg.
	leaseCfg := cfg
	var fence *writeFence
	if opts.leaderElect {
		fence = newWriteFence(opts.renewDeadline)
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return fencedTransport{fence: fence, next: rt} })
	}
	kubeClient, err := kubernetes.NewForConfig(protobufConfig(cfg))
	if err != nil {
		return fmt.Errorf("building kubernetes client: %w", err)
	}
	jobClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building training job client: %w", err)
	}

	ctrlOpts := controller.Options{
		ClusterDomain:             opts.clusterDomain,
		CoschedulingSchedulerName: opts.coschedulingSchedulerName,
		RestartBackoff:            controller.RestartBackoff{Base: opts.restartBackoffBase, Max: opts.restartBackoffMax},
		PodEventBatchPeriod:       opts.podEventBatchPeriod,
	}
	ctrlOpts.GangScheduler, err = controller.ResolveGangScheduler(ctx, kubeClient.Discovery(), opts.gangBackend)
	if err != nil {
		return fmt.Errorf("choosing the gang scheduler: %w", err)
	}
	logger.Info("Gang scheduling", "requested", opts.gangBackend, "backend", ctrlOpts.GangScheduler)
	// The access reviews are writes to the fenced clients: ask unfenced.
	leaseClient, err := kubernetes.NewForConfig(protobufConfig(leaseCfg))
	if err != nil {
		return fmt.Errorf("building the unfenced client: %w", err)
	}
	var why string
	ctrlOpts.Queueing, why, err = controller.ResolveQueueing(ctx, kubeClient.Discovery(),
		leaseClient.AuthorizationV1().SelfSubjectAccessReviews(), opts.queueingSystem)
	if err != nil {
		return fmt.Errorf("choosing the queueing system: %w", err)
	}
	logger.Info("Queueing", "requested", opts.queueingSystem, "system", ctrlOpts.Queueing, "why", why)
	if ctrlOpts.GangScheduler == controller.GangSchedulerCoscheduling || ctrlOpts.Queueing == controller.QueueingKueue {
		if ctrlOpts.DynamicClient, err = dynamic.NewForConfig(cfg); err != nil {
			return fmt.Errorf("building dynamic client: %w", err)
		}
		ctrlOpts.DynamicInformers = controller.NewDynamicInformerFactory(ctrlOpts.DynamicClient, 0)
	}

	kubeInformers := controller.NewKubeInformerFactory(kubeClient, 0)
	jobInformers := controller.NewJobInformerFactory(jobClient, opts.jobResync)
	ctrl, err := controller.New(ctx, kubeClient, jobClient, kubeInformers, jobInformers, ctrlOpts)
	if err != nil {
		return err
	}
	controller.RegisterMetrics()
	legacyregistry.CustomMustRegister(ctrl.JobsCollector())

	var (
		leading  atomic.Bool
		watchdog *leaderelection.HealthzAdaptor
	)
	if opts.leaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if watchdog != nil {
			if err := watchdog.Check(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	health.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		// A standby replica is ready to take over; the leader is ready once
		// its caches are filled.
		if opts.leaderElect && !leading.Load() {
			_, _ = w.Write([]byte("ok: standby"))
			return
		}
		if !ctrl.HasSynced() {
			http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/metrics", legacyregistry.Handler())
	if opts.profiling {
		metricsMux.HandleFunc("/debug/pprof/", pprof.Index)
		metricsMux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		metricsMux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		metricsMux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		metricsMux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}

	servers := []*http.Server{}
	serve := func(name, addr string, h http.Handler) error {
		if addr == "" || addr == "0" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening for %s on %s: %w", name, addr, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		logger.Info("Serving", "endpoint", name, "address", ln.Addr().String())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "HTTP server stopped", "endpoint", name)
			}
		}()
		return nil
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	if err := serve("metrics", opts.metricsAddr, metricsMux); err != nil {
		return err
	}
	if err := serve("health probes", opts.healthAddr, health); err != nil {
		return err
	}

	runController := func(ctx context.Context) {
		kubeInformers.Start(ctx.Done())
		jobInformers.Start(ctx.Done())
		if ctrlOpts.DynamicInformers != nil {
			ctrlOpts.DynamicInformers.Start(ctx.Done())
		}
		ctrl.Run(ctx, opts.concurrentSyncs)
		kubeInformers.Shutdown()
		jobInformers.Shutdown()
		if ctrlOpts.DynamicInformers != nil {
			ctrlOpts.DynamicInformers.Shutdown()
		}
	}
	if !opts.leaderElect {
		runController(ctx)
		return nil
	}

	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("getting hostname for the leader election identity: %w", err)
	}
	identity := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.leaderElectNamespace, opts.leaderElectID,
		leaseClient.CoreV1(), leaseClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}
	election := leaderElection{
		lock: lock, name: opts.leaderElectID, watchdog: watchdog, leading: &leading, fence: fence,
		leaseDuration: opts.leaseDuration, renewDeadline: opts.renewDeadline, retryPeriod: opts.retryPeriod,
	}
	if err := election.run(ctx, logger, runController); err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	return nil
}
