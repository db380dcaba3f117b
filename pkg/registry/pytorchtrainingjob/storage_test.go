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

package pytorchtrainingjob

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestElasticWarning(t *testing.T) {
	job := &batch.PyTorchTrainingJob{}
	if w := Kind.Warnings(job); len(w) != 0 {
		t.Errorf("warnings for a job without elastic: %v", w)
	}
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: false, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
	if w := Kind.Warnings(job); len(w) != 0 {
		t.Errorf("warnings for a job with elastic switched off: %v", w)
	}
	job.Spec.Elastic.Enabled = true
	w := Kind.Warnings(job)
	if len(w) != 1 || !strings.HasPrefix(w[0], "spec.elastic: without spec.torchrunConfig.enabled") {
		t.Errorf("warnings = %v, want one saying the elastic job runs without torchrun", w)
	}
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: true}
	if w := Kind.Warnings(job); len(w) != 0 {
		t.Errorf("warnings for an elastic job with torchrun: %v", w)
	}
}
