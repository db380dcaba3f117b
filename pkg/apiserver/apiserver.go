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

// Package apiserver wires the batch.tensorstack.dev group into a
// k8s.io/apiserver generic server: scheme, storage, options and the embedded
// etcd used when no external etcd is configured.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	openapibuilder3 "k8s.io/kube-openapi/pkg/builder3"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/registry/trainingjob"
	"tensorstack.dev/training/pkg/registry/trainingruntime"
	"tensorstack.dev/training/pkg/registry/tuningjob"
)

// Config is the complete configuration of the server.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	// EmbeddedEtcd is the etcd the server owns, or nil with an external etcd.
	EmbeddedEtcd *EmbeddedEtcd
	// ShutdownTimeout bounds a graceful stop; zero keeps the generic default.
	ShutdownTimeout time.Duration
	// authnSources, when set, holds API requests back until the CA bundles
	// of delegated authentication are loaded.
	authnSources *authnSources
	// Progress is how the progress subresource writes and whom it trusts.
	Progress trainingjob.ProgressConfig
	// ShippedRuntimesImage is the image of the runtimes the server
	// installs; empty installs none.
	ShippedRuntimesImage string
	// Records is how the records of deleted jobs are kept.
	Records RecordsConfig
}

// CompletedConfig is a Config with defaults filled in, ready for New.
type CompletedConfig struct {
	generic         genericapiserver.CompletedConfig
	embeddedEtcd    *EmbeddedEtcd
	shutdownTimeout time.Duration
	authnSources    *authnSources
	progress        trainingjob.ProgressConfig
	shippedImage    string
	records         RecordsConfig
}

// Complete fills in the defaults the generic server derives from the config.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{
		generic:         c.GenericConfig.Complete(),
		embeddedEtcd:    c.EmbeddedEtcd,
		shutdownTimeout: c.ShutdownTimeout,
		authnSources:    c.authnSources,
		progress:        c.Progress,
		shippedImage:    c.ShippedRuntimesImage,
		records:         c.Records,
	}
}

// Server serves the batch.tensorstack.dev group.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	embeddedEtcd     *EmbeddedEtcd
}

// New builds the server and installs the job kinds.
func (c CompletedConfig) New() (*Server, error) {
	generic, err := c.generic.New("training-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	if c.shutdownTimeout > 0 {
		generic.ShutdownTimeout = c.shutdownTimeout
	}
	if c.generic.SecureServing != nil {
		observeServingCert(c.generic.SecureServing.Cert)
	}
	observeEmbeddedEtcd(c.embeddedEtcd)
	if c.authnSources != nil {
		if err := c.authnSources.start(generic); err != nil {
			return nil, err
		}
	}

	group := genericapiserver.NewDefaultAPIGroupInfo(batch.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	storage := map[string]rest.Storage{}
	typeConverter, err := jobTypeConverter(c.generic.OpenAPIV3Config)
	if err != nil {
		return nil, err
	}
	updatePath := trainingjob.UpdatePath{
		Scheme:              Scheme,
		Admission:           c.generic.AdmissionControl,
		TypeConverter:       typeConverter,
		EquivalentResources: c.generic.EquivalentResourceRegistry,
	}
	resolver, err := addRuntimeStorage(storage, c.generic.RESTOptionsGetter, c.generic.Authorization.Authorizer)
	if err != nil {
		return nil, err
	}
	records, err := addRecordStorage(generic, storage, c.generic.RESTOptionsGetter, c.records)
	if err != nil {
		return nil, err
	}
	for _, kind := range trainingjob.Kinds {
		s, err := kind.NewStorage(c.generic.RESTOptionsGetter, updatePath, c.progress, resolver, records)
		if err != nil {
			return nil, err
		}
		for resource, rest := range s.Resources(kind.KindInfo().Resource) {
			storage[resource] = rest
		}
	}
	if err := addTuningStorage(storage, c.generic.RESTOptionsGetter, resolver); err != nil {
		return nil, err
	}
	group.VersionedResourcesStorageMap[v1beta1.SchemeGroupVersion.Version] = storage
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	if c.shippedImage != "" {
		if err := installShippedRuntimes(generic, c.shippedImage); err != nil {
			return nil, err
		}
	}
	return &Server{GenericAPIServer: generic, embeddedEtcd: c.embeddedEtcd}, nil
}

// jobTypeConverter builds the schema of the job kinds that managedFields are
// computed on, from the same OpenAPI definitions the server publishes, as the
// generic server does for its handlers.
func jobTypeConverter(config *openapicommon.OpenAPIV3Config) (managedfields.TypeConverter, error) {
	if config == nil {
		return nil, errors.New("the OpenAPI v3 config is needed to track managed fields")
	}
	var names []string
	for _, k := range batch.Kinds {
		job, err := Scheme.New(v1beta1.SchemeGroupVersion.WithKind(k.Kind))
		if err != nil {
			return nil, fmt.Errorf("the versioned type of %s: %w", k.Kind, err)
		}
		names = append(names, openapiutil.GetCanonicalTypeName(job))
	}
	definitions, err := openapibuilder3.BuildOpenAPIDefinitionsForResources(config, names...)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI models of the job kinds: %w", err)
	}
	return managedfields.NewTypeConverter(definitions, false)
}

// Run serves until ctx is cancelled, then shuts down gracefully and stops
// the embedded etcd, if any, last.
func (s *Server) Run(ctx context.Context) error {
	if s.embeddedEtcd != nil {
		defer s.embeddedEtcd.Close()
	}
	return s.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// addTuningStorage serves the searches and their subresources; a search
// whose trials name a runtime needs a creator who may get it.
func addTuningStorage(storage map[string]rest.Storage, optsGetter generic.RESTOptionsGetter, runtimes *trainingruntime.Resolver) error {
	s, err := tuningjob.NewStorage(Scheme, optsGetter, runtimes.Authorize)
	if err != nil {
		return err
	}
	storage["tuningjobs"], storage["tuningjobs/status"] = s.Job, s.Status
	storage["tuningjobs/pause"], storage["tuningjobs/resume"] = s.Pause, s.Resume
	return nil
}

// addRuntimeStorage serves the runtimes beside the job kinds, and returns
// what applies them to new jobs, reading them from the same storage and
// asking authz whether a job's creator may.
func addRuntimeStorage(storage map[string]rest.Storage, optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer) (*trainingruntime.Resolver, error) {
	namespaced, err := trainingruntime.NewTrainingRuntimeREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	cluster, err := trainingruntime.NewClusterTrainingRuntimeREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	storage["trainingruntimes"], storage["clustertrainingruntimes"] = namespaced, cluster
	return trainingruntime.NewResolver(cluster, namespaced, authz, Scheme), nil
}
