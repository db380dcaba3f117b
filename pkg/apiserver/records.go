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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/registry/trainingjobrecord"
)

// RecordsConfig is how the server keeps the records of deleted jobs.
type RecordsConfig struct {
	Bounds trainingjobrecord.Bounds
	// Events reads a deleted job's events for its record; nil keeps none.
	Events trainingjobrecord.EventLister
}

// kubeEvents reads a job's events from kube-apiserver, as the server's own
// identity, for the job's record.
type kubeEvents struct {
	client kubernetes.Interface
}

// eventsListLimit bounds one read of a job's events: a record keeps the
// newest few, and a job with more events than this is rare.
const eventsListLimit = 500

// The events client's rate. It reads once for each deleted job, within the
// delete: at client-go's default of 5 a second, deleting a namespace's 1,000
// jobs took over three minutes, and 10,000 jobs over half an hour.
const (
	eventsClientQPS   = 100
	eventsClientBurst = 200
)

// newKubeEvents returns nil when the server has no kube-apiserver to ask.
func newKubeEvents(config *restclient.Config) (trainingjobrecord.EventLister, error) {
	if config == nil {
		return nil, nil
	}
	config = restclient.CopyConfig(config)
	config.QPS, config.Burst = eventsClientQPS, eventsClientBurst
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return kubeEvents{client: client}, nil
}

func (e kubeEvents) Events(ctx context.Context, namespace string, uid types.UID) ([]corev1.Event, error) {
	list, err := e.client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String(),
		Limit:         eventsListLimit,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// encodeRecordedJob writes a job as a record holds it: the group's served
// version, as JSON.
func encodeRecordedJob(job batch.TrainingJob) ([]byte, error) {
	return runtime.Encode(Codecs.LegacyCodec(v1beta1.SchemeGroupVersion), job)
}

// addRecordStorage serves the records of deleted jobs and returns their
// keeper, which the job kinds' storage hands each deleted job. The keeper
// drops expired records from the server's start to its stop.
func addRecordStorage(server *genericapiserver.GenericAPIServer, storage map[string]rest.Storage, optsGetter generic.RESTOptionsGetter,
	config RecordsConfig) (*trainingjobrecord.Keeper, error) {
	store, err := trainingjobrecord.NewStore(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	storage[trainingjobrecord.Resource] = trainingjobrecord.NewREST(store)
	keeper := trainingjobrecord.NewKeeper(store, encodeRecordedJob, config.Events, config.Bounds)
	err = server.AddPostStartHook("expire-job-records", func(ctx genericapiserver.PostStartHookContext) error {
		go keeper.Run(ctx.Context)
		return nil
	})
	return keeper, err
}
