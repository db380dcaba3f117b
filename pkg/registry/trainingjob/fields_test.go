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
	"testing"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestSelectableFields(t *testing.T) {
	job := newJob("train", 1)
	job.Status.Phase = batch.JobPaused
	labels, fields, err := GetAttrs(job)
	if err != nil {
		t.Fatal(err)
	}
	if fields["metadata.name"] != "train" || fields["metadata.namespace"] != "ns" || fields["status.phase"] != "Paused" {
		t.Errorf("fields = %v", fields)
	}
	if len(labels) != 0 {
		t.Errorf("labels = %v, want none", labels)
	}
	if _, _, err := GetAttrs(&batch.PauseRequest{}); err == nil {
		t.Errorf("GetAttrs of a non-job succeeded")
	}
}
