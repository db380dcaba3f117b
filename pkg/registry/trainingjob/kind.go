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

package trainingjob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Kind is what the shared storage needs to know about one job kind. J is the
// kind's internal type and S the type of its spec.
type Kind[J batch.TrainingJob, S any] struct {
	// Info is the kind's row of the table of kinds: its resource, singular
	// and short names.
	Info batch.KindInfo

	// New returns an empty job; NewList an empty list of jobs.
	New     func() J
	NewList func() runtime.Object
	// Spec returns the job's whole spec, kind-specific fields included.
	Spec func(J) *S

	// Canonicalize rewrites accepted alternative spellings to their stored form.
	Canonicalize func(J)
	// Validate and ValidateUpdate check a job on create and on spec update.
	Validate       func(J) field.ErrorList
	ValidateUpdate func(job, old J) field.ErrorList
	// Warnings points out settings of the kind's own spec that are accepted
	// but have no effect; nil when there are none.
	Warnings func(J) []string
}

// KindInfo is the kind's row of batch.Kinds.
func (k *Kind[J, S]) KindInfo() batch.KindInfo { return k.Info }

// NewStorage returns the REST objects of the kind, with the scale
// subresource when the kind's row says it is Scalable.
func (k *Kind[J, S]) NewStorage(optsGetter generic.RESTOptionsGetter, updatePath UpdatePath, progress ProgressConfig, runtimes RuntimeResolver,
	records JobRecorder) (*Storage, error) {
	s, err := NewStorage(optsGetter, k, updatePath, progress, runtimes, records)
	if err != nil {
		return nil, err
	}
	if k.Info.Scalable {
		s.Scale = NewScaleREST(s.Job.Store, k.Info.Kind)
	}
	return s, nil
}

// Resource is the kind's plural resource in the group.
func (k *Kind[J, S]) Resource() schema.GroupResource { return batch.Resource(k.Info.Resource) }
