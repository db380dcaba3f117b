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
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"tensorstack.dev/training/pkg/controller"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/controller/servingcert"
)

// options are the command-line flags.
type options struct {
	kubeconfig           string
	kubeAPIQPS           float32
	kubeAPIBurst         int
	concurrentSyncs      int
	podEventBatchPeriod  time.Duration
	jobResync            time.Duration
	restartBackoffBase   time.Duration
	restartBackoffMax    time.Duration
	clusterDomain        string
	leaderElect          bool
	leaderElectNamespace string
	leaderElectID        string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	metricsAddr          string
	metricsSecure        bool
	metricsCertDir       string
	healthAddr           string
	profiling            bool
	// gangScheduler is --gang-scheduler as given; gangBackend its parsed
	// value, set by validate.
	gangScheduler string
	gangBackend   gang.Scheduler
	// queueing is --queueing as given; queueingSystem its parsed value.
	queueing              string
	queueingSystem        kueue.Queueing
	queueingRecheckPeriod time.Duration
	// Kueue's settings for jobs that name no queue; kueueManagement is
	// their parsed value.
	manageJobsWithoutQueueName   bool
	managedJobsNamespaceSelector string
	kueueManagement              kueue.Management
	coschedulingSchedulerName    string

	// The training-apiserver's serving certificate (servingcert.go).
	servingCertSecret        string
	servingCertAPIService    string
	servingCertDNSNames      []string
	servingCertDir           string
	servingCertCAValidity    time.Duration
	servingCertValidity      time.Duration
	servingCertRenewBefore   time.Duration
	servingCertCheckInterval time.Duration

	// The etcd cluster's certificates (etcdcerts.go).
	etcdCerts etcdCertOptions
}

func newOptions() *options {
	return &options{
		// No client-side limit: API Priority and Fairness on the server
		// shares it out (artifacts/deploy gives the controller its own
		// priority level), as for current Kubernetes components.
		kubeAPIQPS:           -1,
		kubeAPIBurst:         0,
		concurrentSyncs:      10,
		podEventBatchPeriod:  controller.DefaultPodEventBatchPeriod,
		jobResync:            10 * time.Minute,
		restartBackoffBase:   controller.DefaultRestartBackoffBase,
		restartBackoffMax:    controller.DefaultRestartBackoffMax,
		leaderElect:          true,
		leaderElectNamespace: "tensorstack-system",
		leaderElectID:        "training-controller-manager",
		leaseDuration:        15 * time.Second,
		renewDeadline:        10 * time.Second,
		retryPeriod:          2 * time.Second,
		metricsAddr:          ":8443",
		metricsSecure:        true,
		healthAddr:           ":8081",

		gangScheduler:                string(gang.SchedulerAuto),
		queueing:                     string(kueue.QueueingAuto),
		queueingRecheckPeriod:        kueue.DefaultRecheckPeriod,
		managedJobsNamespaceSelector: kueue.DefaultManagedJobsNamespaceSelector,
		coschedulingSchedulerName:    gang.DefaultCoschedulingSchedulerName,

		servingCertAPIService:    "v1beta1.batch.tensorstack.dev",
		servingCertDNSNames:      []string{"training-apiserver.tensorstack-system.svc", "training-apiserver.tensorstack-system.svc.cluster.local"},
		servingCertDir:           "/var/run/training-apiserver/serving-cert",
		servingCertCAValidity:    servingcert.DefaultCAValidity,
		servingCertValidity:      servingcert.DefaultCertValidity,
		servingCertRenewBefore:   servingcert.DefaultRenewBefore,
		servingCertCheckInterval: servingcert.DefaultCheckInterval,

		etcdCerts: newEtcdCertOptions(),
	}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig,
		"Path to a kubeconfig file. Empty uses the in-cluster configuration.")
	fs.Float32Var(&o.kubeAPIQPS, "kube-api-qps", o.kubeAPIQPS,
		"Queries per second allowed to the apiserver; negative sets no client-side limit and leaves it to "+
			"the server's API Priority and Fairness.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", o.kubeAPIBurst,
		"Burst of queries allowed to the apiserver, with a positive --kube-api-qps.")
	fs.IntVar(&o.concurrentSyncs, "concurrent-syncs", o.concurrentSyncs,
		"Number of jobs reconciled at the same time.")
	fs.DurationVar(&o.podEventBatchPeriod, "pod-event-batch-period", o.podEventBatchPeriod,
		"How long changes to a job's pods are gathered before the job is reconciled, so that a burst of them "+
			"costs one status write; 0 reconciles on every change.")
	fs.DurationVar(&o.jobResync, "job-resync-period", o.jobResync,
		"How often every job is reconciled even without a change (0 disables).")
	fs.DurationVar(&o.restartBackoffBase, "restart-backoff-base", o.restartBackoffBase,
		"Delay before a replica whose pod exited is started again; it doubles with each restart in a row.")
	fs.DurationVar(&o.restartBackoffMax, "restart-backoff-max", o.restartBackoffMax,
		"Longest delay before a replica whose pod exited is started again.")
	fs.StringVar(&o.clusterDomain, "cluster-domain", o.clusterDomain,
		"DNS domain of the cluster (e.g. cluster.local). When set, replica addresses are fully qualified: "+
			"<type>-<i>.<job>.<namespace>.svc.<domain>. Empty gives <type>-<i>.<job>.<namespace>.svc.")
	fs.BoolVar(&o.leaderElect, "leader-elect", o.leaderElect,
		"Run only while holding the leader Lease, so that several replicas can be deployed.")
	fs.StringVar(&o.leaderElectNamespace, "leader-elect-namespace", o.leaderElectNamespace,
		"Namespace of the leader election Lease.")
	fs.StringVar(&o.leaderElectID, "leader-elect-id", o.leaderElectID, "Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", o.leaseDuration,
		"How long a standby waits after the last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", o.renewDeadline,
		"How long the leader tries to renew before giving up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", o.retryPeriod,
		"How long to wait between attempts to acquire or renew.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", o.metricsAddr,
		"Address serving Prometheus metrics at /metrics; empty or 0 disables.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", o.metricsSecure,
		"Serve the metrics over HTTPS to requests whose bearer token kube-apiserver accepts and authorizes for "+
			"the path (TokenReview and SubjectAccessReview; the ClusterRole training-metrics-reader grants /metrics). "+
			"false serves plain HTTP to anyone: for a local stack only.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", o.metricsCertDir,
		"Directory with tls.crt and tls.key for the metrics endpoint, read again when they change. Empty: a "+
			"self-signed certificate made at start-up.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", o.healthAddr,
		"Address serving /healthz, /livez and /readyz; empty or 0 disables.")
	fs.BoolVar(&o.profiling, "profiling", o.profiling,
		"Serve Go's profiles at /debug/pprof/ on the metrics address, to users authorized for the path as "+
			"for /metrics (with --metrics-secure=false, to anyone who reaches the address).")
	fs.StringVar(&o.queueing, "queueing", o.queueing,
		"Queueing system that admits the jobs naming a queue (spec.scheduler.t9kScheduler.queue or the label "+
			"kueue.x-k8s.io/queue-name): auto (or kueue, the same) queues them with Kueue, deciding again every "+
			"--queueing-recheck-period whether the cluster serves kueue.x-k8s.io/v1beta2 (Kueue v0.16 or newer) and "+
			"the controller may use it; while it cannot, they wait, and their Queued condition says why. none runs "+
			"them at once, unqueued, and their Queued condition says so.")
	fs.DurationVar(&o.queueingRecheckPeriod, "queueing-recheck-period", o.queueingRecheckPeriod,
		"How often the controller checks again whether Kueue is served and may be used.")
	fs.BoolVar(&o.manageJobsWithoutQueueName, "manage-jobs-without-queue-name", o.manageJobsWithoutQueueName,
		"Kueue's manageJobsWithoutQueueName: a job that names no queue, in a namespace --managed-jobs-namespace-selector "+
			"picks, waits until it names one. Set it as Kueue's Configuration has it.")
	fs.StringVar(&o.managedJobsNamespaceSelector, "managed-jobs-namespace-selector", o.managedJobsNamespaceSelector,
		"Kueue's managedJobsNamespaceSelector, as a label selector: the namespaces where a job that names no queue "+
			"goes to the LocalQueue named default, when there is one, or waits (--manage-jobs-without-queue-name). "+
			"Empty picks every namespace. Set it as Kueue's Configuration has it; the default is Kueue's.")
	fs.StringVar(&o.gangScheduler, "gang-scheduler", o.gangScheduler,
		"How jobs with spec.scheduler.t9kScheduler are gang-scheduled: workload (the Workload API, "+
			"scheduling.k8s.io/v1beta1), coscheduling (scheduler-plugins' PodGroups, scheduling.x-k8s.io/v1alpha1), "+
			"none, or auto: workload if the cluster serves it, else coscheduling if served, else none. Decided at start-up.")
	fs.StringVar(&o.coschedulingSchedulerName, "coscheduling-scheduler-name", o.coschedulingSchedulerName,
		"The scheduler running the Coscheduling plugin; with the coscheduling backend, every pod of a gang job is scheduled by it.")
	fs.StringVar(&o.servingCertSecret, "serving-cert-secret", o.servingCertSecret,
		"NAMESPACE/NAME of the Secret holding the training-apiserver's serving certificate, which every replica then "+
			"keeps: a CA of the installation's own, a certificate it signs, renewed before expiry, and the CA in the "+
			"APIService's caBundle. The Secret must carry the annotation "+servingcert.ManagedByAnnotation+"="+
			servingcert.ManagedByValue+". Empty: another source (cert-manager) provides the certificate.")
	fs.StringVar(&o.servingCertAPIService, "serving-cert-apiservice", o.servingCertAPIService,
		"The APIService whose caBundle gets the CA.")
	fs.StringSliceVar(&o.servingCertDNSNames, "serving-cert-dns-names", o.servingCertDNSNames,
		"The serving certificate's DNS names, the training-apiserver Service's first.")
	fs.StringVar(&o.servingCertDir, "serving-cert-dir", o.servingCertDir,
		"Where the Secret of --serving-cert-secret is mounted in this pod: the rotator stops, saying so, when "+
			"what it writes never reaches the pods.")
	fs.DurationVar(&o.servingCertCAValidity, "serving-cert-ca-validity", o.servingCertCAValidity,
		"How long a new CA is valid. A new CA changes the APIService's caBundle.")
	fs.DurationVar(&o.servingCertValidity, "serving-cert-validity", o.servingCertValidity,
		"How long a new serving certificate is valid.")
	fs.DurationVar(&o.servingCertRenewBefore, "serving-cert-renew-before", o.servingCertRenewBefore,
		"How long before its end a certificate or CA is renewed.")
	fs.DurationVar(&o.servingCertCheckInterval, "serving-cert-check-interval", o.servingCertCheckInterval,
		"How often the certificate's validity is checked; shorter than --serving-cert-renew-before.")
	o.etcdCerts.addFlags(fs)
}

func (o *options) validate() error {
	backend, err := gang.Parse(o.gangScheduler)
	if err != nil {
		return fmt.Errorf("--gang-scheduler: %w", err)
	}
	o.gangBackend = backend
	if o.queueingSystem, err = kueue.ParseQueueing(o.queueing); err != nil {
		return fmt.Errorf("--queueing: %w", err)
	}
	if o.queueingRecheckPeriod <= 0 {
		return fmt.Errorf("--queueing-recheck-period must be positive, got %v", o.queueingRecheckPeriod)
	}
	o.kueueManagement.ManageJobsWithoutQueueName = o.manageJobsWithoutQueueName
	if o.managedJobsNamespaceSelector != "" {
		selector, err := labels.Parse(o.managedJobsNamespaceSelector)
		if err != nil {
			return fmt.Errorf("--managed-jobs-namespace-selector: %w", err)
		}
		o.kueueManagement.NamespaceSelector = selector
	}
	if errs := validation.IsDNS1123Subdomain(o.coschedulingSchedulerName); len(errs) > 0 {
		return fmt.Errorf("--coscheduling-scheduler-name %q: %v", o.coschedulingSchedulerName, errs)
	}
	if o.restartBackoffBase <= 0 || o.restartBackoffMax < o.restartBackoffBase {
		return fmt.Errorf("--restart-backoff-base (%v) must be positive and at most --restart-backoff-max (%v)",
			o.restartBackoffBase, o.restartBackoffMax)
	}
	if o.kubeAPIQPS > 0 && o.kubeAPIBurst < 1 {
		return fmt.Errorf("--kube-api-burst must be at least 1 with a positive --kube-api-qps, got %d", o.kubeAPIBurst)
	}
	if o.podEventBatchPeriod < 0 {
		return fmt.Errorf("--pod-event-batch-period must not be negative, got %v", o.podEventBatchPeriod)
	}
	if o.concurrentSyncs < 1 {
		return fmt.Errorf("--concurrent-syncs must be at least 1, got %d", o.concurrentSyncs)
	}
	if o.metricsCertDir != "" && !o.metricsSecure {
		return fmt.Errorf("--metrics-cert-dir needs --metrics-secure: plain HTTP uses no certificate")
	}
	if o.clusterDomain != "" {
		if errs := validation.IsDNS1123Subdomain(o.clusterDomain); len(errs) > 0 {
			return fmt.Errorf("--cluster-domain %q: %v", o.clusterDomain, errs)
		}
	}
	if _, _, err := o.servingCertConfig(); err != nil {
		return err
	}
	if _, _, err := o.etcdCerts.config(); err != nil {
		return err
	}
	if o.leaderElect {
		if o.leaderElectNamespace == "" || o.leaderElectID == "" {
			return fmt.Errorf("--leader-elect needs --leader-elect-namespace and --leader-elect-id")
		}
		if o.leaseDuration <= o.renewDeadline || o.renewDeadline <= o.retryPeriod {
			return fmt.Errorf("leader election needs lease duration > renew deadline > retry period")
		}
	}
	return nil
}
