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

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
	netutils "k8s.io/utils/net"

	"tensorstack.dev/training/pkg/admission/jobpods"
	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	generatedopenapi "tensorstack.dev/training/pkg/generated/openapi"
	"tensorstack.dev/training/pkg/registry/trainingjob"
	"tensorstack.dev/training/pkg/registry/trainingjobrecord"
	"tensorstack.dev/training/pkg/version"
)

// etcdPathPrefix is where the group's objects live in etcd: under
// /registry/batch.tensorstack.dev/<resource>/, as kube-apiserver lays out its
// own (the storage adds the group and resource; see etcdkeys.go).
const etcdPathPrefix = "/registry"

// DefaultEmbeddedEtcdDir keeps a local run's data with the other build output.
const DefaultEmbeddedEtcdDir = "_output/training-etcd"

// Options are the command-line options of the server.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions
	// EmbeddedEtcdDir is where the embedded etcd keeps its data when no
	// --etcd-servers are given.
	EmbeddedEtcdDir string
	// EmbeddedEtcdUnsafeNoFsync turns off the embedded etcd's fsyncs: for
	// test stacks only, as etcd's own --unsafe-no-fsync.
	EmbeddedEtcdUnsafeNoFsync bool
	// ShutdownTimeout bounds how long a stopping server waits for open
	// requests. Watches proxied by kube-apiserver never end by themselves,
	// so without a short bound every stop would take the generic minute.
	ShutdownTimeout time.Duration
	// EtcdRequestTimeout bounds each storage call of a request, so that a
	// request answers 504 instead of hanging while etcd does not answer.
	// Zero leaves only the generic request timeouts.
	EtcdRequestTimeout time.Duration
	// AnonymousAuth, when false, refuses unauthenticated requests everywhere
	// but the health paths that need no authorization, so kubelet probes
	// still work.
	AnonymousAuth bool
	// ProgressWriteInterval is the shortest time between two stored
	// progress reports of a job.
	ProgressWriteInterval time.Duration
	// TLSCertWait is how long the server waits at start for its
	// --tls-cert-file and --tls-private-key-file to appear; zero does not
	// wait.
	TLSCertWait time.Duration
	// ShippedRuntimesImage is the image of the runtimes the server installs
	// (shippedruntimes.go); empty installs none.
	ShippedRuntimesImage string
	// JobRecordsPerNamespace and JobRecordRetention bound the records of
	// deleted jobs each namespace keeps.
	JobRecordsPerNamespace int
	JobRecordRetention     time.Duration
}

// NewOptions returns the options with their defaults: objects are stored as
// v1beta1, the storage version of the group, in protobuf.
func NewOptions() *Options {
	o := &Options{
		// The storage codec follows --storage-media-type; Config sets it.
		RecommendedOptions: genericoptions.NewRecommendedOptions(etcdPathPrefix, nil),
		EmbeddedEtcdDir:    DefaultEmbeddedEtcdDir,
		ShutdownTimeout:    5 * time.Second,
		EtcdRequestTimeout: DefaultEtcdRequestTimeout,
		AnonymousAuth:      true,

		ProgressWriteInterval: trainingjob.DefaultProgressWriteInterval,

		JobRecordsPerNamespace: trainingjobrecord.DefaultPerNamespace,
		JobRecordRetention:     trainingjobrecord.DefaultRetention,
	}
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	// Profiles only when asked for (--profiling); they are behind the same
	// authorization as /metrics then.
	o.RecommendedOptions.Features.EnableProfiling = false
	setServerFeatureDefaults(utilfeature.DefaultMutableFeatureGate)
	// The plugins judging jobs by their pods run after the generic ones, on
	// by default; --disable-admission-plugins switches them off.
	admissionOptions := o.RecommendedOptions.Admission
	jobpods.Register(admissionOptions.Plugins)
	admissionOptions.RecommendedPluginOrder = append(admissionOptions.RecommendedPluginOrder, jobpods.PluginNames...)
	o.RecommendedOptions.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		if c.ClientConfig == nil {
			return nil, nil
		}
		initializer, err := jobpods.NewInitializer(c.ClientConfig)
		if err != nil {
			return nil, err
		}
		return []admission.PluginInitializer{initializer}, nil
	}
	return o
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	fs.StringVar(&o.EmbeddedEtcdDir, "embedded-etcd-dir", o.EmbeddedEtcdDir,
		"Directory of the etcd started inside the server when --etcd-servers is empty. "+
			"It listens only on unix sockets in this directory.")
	fs.BoolVar(&o.EmbeddedEtcdUnsafeNoFsync, "embedded-etcd-unsafe-no-fsync", o.EmbeddedEtcdUnsafeNoFsync,
		"Let the embedded etcd skip every fsync, as etcd's --unsafe-no-fsync does. Data are lost when the machine "+
			"stops: for test and benchmark stacks only.")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout,
		"How long a stopping server waits for open requests, watches included, before it closes them.")
	fs.DurationVar(&o.EtcdRequestTimeout, "etcd-request-timeout", o.EtcdRequestTimeout,
		"How long a request waits for each answer of etcd before it is answered 504 with Retry-After, "+
			"so requests do not hang while etcd is unreachable. Reads the watch cache can serve do not wait for etcd. 0 disables the bound.")
	fs.DurationVar(&o.ProgressWriteInterval, "progress-write-interval", o.ProgressWriteInterval,
		"The shortest time between two writes of a job's progress reports to etcd. Reports that come sooner wait, "+
			"and the latest of them is written at the end of the interval.")
	fs.DurationVar(&o.TLSCertWait, "tls-cert-wait", o.TLSCertWait,
		"How long to wait at start for --tls-cert-file and --tls-private-key-file, and for --etcd-certfile, "+
			"--etcd-keyfile and --etcd-cafile, to exist, as when another component writes them into a mounted Secret; "+
			"0 does not wait.")
	fs.StringVar(&o.ShippedRuntimesImage, "shipped-runtimes-image", o.ShippedRuntimesImage,
		"The training image of the ClusterTrainingRuntimes the server installs when it starts (torch-distributed, "+
			"tensorflow, xgboost, mpi and generic); empty installs none. A runtime the server installed is brought back "+
			"to what it ships at every start unless its annotation "+AnnotationAutoUpdate+" is changed to \"false\".")
	fs.IntVar(&o.JobRecordsPerNamespace, "job-records-per-namespace", o.JobRecordsPerNamespace,
		"The most records of deleted jobs (trainingjobrecords) a namespace keeps; past it, the records of the jobs "+
			"deleted longest ago go first. 0 keeps any number.")
	fs.DurationVar(&o.JobRecordRetention, "job-record-retention", o.JobRecordRetention,
		"How long the record of a deleted job is kept after the job's deletion. 0 keeps it until it is deleted "+
			"or dropped past --job-records-per-namespace.")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth,
		"Whether unauthenticated requests are treated as system:anonymous. When false, they are "+
			"accepted only on the paths of --authorization-always-allow-paths (health checks).")
}

// restrictAnonymous limits anonymous requests to the paths that are
// authorized for everyone anyway.
func (o *Options) restrictAnonymous() {
	authn, authz := o.RecommendedOptions.Authentication, o.RecommendedOptions.Authorization
	if o.AnonymousAuth || authn == nil {
		return
	}
	anonymous := &apiserverconfig.AnonymousAuthConfig{Enabled: true}
	if authz != nil {
		for _, path := range authz.AlwaysAllowPaths {
			if !strings.Contains(path, "*") {
				anonymous.Conditions = append(anonymous.Conditions, apiserverconfig.AnonymousAuthCondition{Path: path})
			}
		}
	}
	if len(anonymous.Conditions) == 0 {
		anonymous.Enabled = false
	}
	authn.Anonymous = anonymous
}

// usesEmbeddedEtcd says whether the server starts its own etcd.
func (o *Options) usesEmbeddedEtcd() bool {
	return len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0
}

// Validate reports every invalid option.
func (o *Options) Validate() error {
	recommended := *o.RecommendedOptions
	var errs []error
	if o.EtcdRequestTimeout < 0 {
		errs = append(errs, errors.New("--etcd-request-timeout must not be negative"))
	}
	if o.TLSCertWait < 0 {
		errs = append(errs, errors.New("--tls-cert-wait must not be negative"))
	}
	if o.JobRecordsPerNamespace < 0 {
		errs = append(errs, errors.New("--job-records-per-namespace must not be negative"))
	}
	if o.JobRecordRetention < 0 {
		errs = append(errs, errors.New("--job-record-retention must not be negative"))
	}
	if o.usesEmbeddedEtcd() {
		if o.EmbeddedEtcdDir == "" {
			return fmt.Errorf("--embedded-etcd-dir must be set when --etcd-servers is empty")
		}
		// The embedded etcd's address is only known once it runs; validate
		// the rest of the storage options with a stand-in.
		etcd := *recommended.Etcd
		etcd.StorageConfig.Transport.ServerList = []string{"unix://" + filepath.Join(o.EmbeddedEtcdDir, "client.sock")}
		recommended.Etcd = &etcd
	}
	return utilerrors.NewAggregate(append(errs, recommended.Validate()...))
}

// Config builds the server configuration, starting the embedded etcd when no
// external one is configured. The caller owns the returned etcd through the
// server's Run.
func (o *Options) Config() (*Config, error) {
	certKey := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	if err := waitForServingCert(context.Background(), certKey.CertFile, certKey.KeyFile, o.TLSCertWait, time.Second); err != nil {
		return nil, err
	}
	if !o.usesEmbeddedEtcd() {
		transport := o.RecommendedOptions.Etcd.StorageConfig.Transport
		files := []string{transport.CertFile, transport.KeyFile, transport.TrustedCAFile}
		if err := waitForEtcdCerts(context.Background(), files, o.TLSCertWait, time.Second); err != nil {
			return nil, err
		}
	}
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts(
		"localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed serving certificate: %w", err)
	}

	var embedded *EmbeddedEtcd
	if o.usesEmbeddedEtcd() {
		var err error
		if embedded, err = StartEmbeddedEtcd(o.EmbeddedEtcdDir, EmbeddedEtcdSettings{UnsafeNoFsync: o.EmbeddedEtcdUnsafeNoFsync}); err != nil {
			return nil, err
		}
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{embedded.ClientURL}
	}

	o.restrictAnonymous()
	authn, err := prepareAuthnSources(o.RecommendedOptions.Authentication)
	if err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	config := genericapiserver.NewRecommendedConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIConfig.Info.Title = "TensorStack Training"
	config.OpenAPIConfig.Info.Version = version.Get()
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIV3Config.Info.Title = "TensorStack Training"
	config.OpenAPIV3Config.Info.Version = version.Get()
	config.FeatureGate = utilfeature.DefaultFeatureGate
	config.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", "")
	applyRequestLimits(&config.Config)
	// A stopping replica keeps its port open until the requests it has
	// drain, answering new ones 429 with Retry-After and Connection: close.
	// kube-apiserver passes that on and clients retry, on a new connection
	// that reaches a replica still serving; closing at once instead fails
	// requests that kube-apiserver has already sent over its pooled
	// connection to this replica (503), even past the preStop delay that
	// takes the pod out of the Service.
	config.ShutdownSendRetryAfter = true

	if err := o.applyStorageCodec(); err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	if err := o.RecommendedOptions.ApplyTo(config); err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	if authn := o.RecommendedOptions.Authentication; authn != nil {
		config.Authentication.Authenticator = restrictAnonymousAuthenticator(authn.Anonymous, config.Authentication.Authenticator)
	}
	// Before any storage reads: objects an earlier release stored under
	// another key.
	if err := migrateStorage(context.Background(), o.RecommendedOptions.Etcd.StorageConfig); err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	if o.EtcdRequestTimeout > 0 {
		config.RESTOptionsGetter = boundedRESTOptionsGetter{RESTOptionsGetter: config.RESTOptionsGetter, timeout: o.EtcdRequestTimeout}
	}
	pods, err := newKubePods(config.ClientConfig)
	if err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	events, err := newKubeEvents(config.ClientConfig)
	if err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	if !authn.complete(&config.Config) {
		authn = nil
	} else {
		authn.install(&config.Config)
	}
	return &Config{
		GenericConfig: config, EmbeddedEtcd: embedded, ShutdownTimeout: o.ShutdownTimeout, authnSources: authn,
		Progress:             trainingjob.ProgressConfig{Interval: o.ProgressWriteInterval, Pods: pods},
		ShippedRuntimesImage: o.ShippedRuntimesImage,
		Records: RecordsConfig{Events: events,
			Bounds: trainingjobrecord.Bounds{PerNamespace: o.JobRecordsPerNamespace, Retention: o.JobRecordRetention}},
	}, nil
}

// applyStorageCodec makes the storage write v1beta1 in --storage-media-type.
// The generic server honours that flag only with a storage factory of its
// own, not with the simple one this server uses, so the codec is built here.
// It reads every media type whatever it writes: objects stored as JSON, as
// they were before protobuf became the default, stay readable and are
// rewritten in protobuf on their next update.
func (o *Options) applyStorageCodec() error {
	etcd := o.RecommendedOptions.Etcd
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  etcd.DefaultStorageMediaType,
		StorageSerializer: Codecs,
		StorageVersion:    v1beta1.SchemeGroupVersion,
		MemoryVersion:     batch.SchemeGroupVersion,
	})
	if err != nil {
		return fmt.Errorf("building the storage codec: %w", err)
	}
	etcd.StorageConfig.Codec = newCompactingCodec(codec)
	etcd.StorageConfig.EncodeVersioner = versioner
	return nil
}
