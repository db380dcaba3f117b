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
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestStoredJobReadsItsRendezvous: a job in etcd whose torchrunConfig names
// no rendezvous, as none written through this server does, reads back with
// the default its pods are built with (static, or c10d when elastic), and
// one stored with c10d, as every job created while c10d was the default
// was, keeps it.
func TestStoredJobReadsItsRendezvous(t *testing.T) {
	compacting, plain := storageCodecs(t)
	elastic := &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
	cases := []struct {
		name    string
		stored  v1beta1.RendezvousBackend
		elastic *v1beta1.ElasticConfig
		want    batch.RendezvousBackend
	}{
		{"none stored", "", nil, batch.RendezvousBackendStatic},
		{"none stored, elastic", "", elastic, batch.RendezvousBackendC10d},
		{"c10d stored", v1beta1.RendezvousBackendC10d, nil, batch.RendezvousBackendC10d},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &v1beta1.PyTorchTrainingJob{
				TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "PyTorchTrainingJob"},
				ObjectMeta: metav1.ObjectMeta{Name: "ddp", Namespace: "team", UID: "uid-ddp"},
				Spec: v1beta1.PyTorchTrainingJobSpec{
					TorchrunConfig: &v1beta1.TorchrunConfig{Enabled: true, RdzvBackend: tc.stored},
					Elastic:        tc.elastic,
					TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: []v1beta1.ReplicaSpec{{
						Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To[int32](2),
						Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: v1beta1.PyTorchContainerName, Image: "trainer:1", Command: []string{"python3", "train.py"},
						}}}},
					}}},
				},
			}
			var buf bytes.Buffer
			if err := plain.Encode(job, &buf); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(buf.Bytes(), []byte(batch.RendezvousBackendStatic)) {
				t.Fatal("the stored bytes name static already: the test stores what it should read back")
			}
			obj, _, err := compacting.Decode(buf.Bytes(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.(*batch.PyTorchTrainingJob).Spec.TorchrunConfig.RdzvBackend; got != tc.want {
				t.Errorf("rdzvBackend read back as %q, want %q", got, tc.want)
			}
		})
	}
}
