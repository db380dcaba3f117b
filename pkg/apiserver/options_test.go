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
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestOptionsEmbeddedEtcd(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"embedded etcd by default", nil, ""},
		{"external etcd", []string{"--etcd-servers=https://etcd-0:2379", "--embedded-etcd-dir="}, ""},
		{"no etcd at all", []string{"--embedded-etcd-dir="}, "--embedded-etcd-dir must be set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
			if got := o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList; o.usesEmbeddedEtcd() && len(got) != 0 {
				t.Errorf("Validate changed the server list to %v", got)
			}
		})
	}
}

func TestEmbeddedEtcdRejectsLongDirectory(t *testing.T) {
	_, err := StartEmbeddedEtcd("/tmp/"+strings.Repeat("d", 120), EmbeddedEtcdSettings{})
	if err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("StartEmbeddedEtcd with a long directory: %v, want a too-long error", err)
	}
}

func TestAnonymousAuthFalseKeepsHealthPaths(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--anonymous-auth=false", "--authorization-always-allow-paths=/healthz,/readyz,/debug/*"}); err != nil {
		t.Fatal(err)
	}
	o.restrictAnonymous()
	anonymous := o.RecommendedOptions.Authentication.Anonymous
	var paths []string
	for _, c := range anonymous.Conditions {
		paths = append(paths, c.Path)
	}
	if !anonymous.Enabled || strings.Join(paths, ",") != "/healthz,/readyz" {
		t.Errorf("anonymous = enabled %v on %v, want enabled only on /healthz,/readyz", anonymous.Enabled, paths)
	}

	o = NewOptions()
	o.restrictAnonymous()
	if a := o.RecommendedOptions.Authentication.Anonymous; !a.Enabled || len(a.Conditions) != 0 {
		t.Errorf("default anonymous = %+v, want enabled everywhere (authorization decides)", a)
	}
}

func TestEtcdRequestTimeoutFlag(t *testing.T) {
	o := NewOptions()
	if o.EtcdRequestTimeout != DefaultEtcdRequestTimeout {
		t.Errorf("default --etcd-request-timeout = %v, want %v", o.EtcdRequestTimeout, DefaultEtcdRequestTimeout)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--etcd-request-timeout=-1s"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--etcd-request-timeout") {
		t.Errorf("Validate with a negative --etcd-request-timeout: %v", err)
	}
}

// TestStorageCodec checks that jobs are written in --storage-media-type,
// protobuf by default, and that either codec reads what the other wrote.
func TestStorageCodec(t *testing.T) {
	protobufMagic, jsonStart := []byte("k8s\x00"), []byte("{")
	cases := []struct {
		args       []string
		wantPrefix []byte
	}{
		{nil, protobufMagic},
		{[]string{"--storage-media-type=" + runtime.ContentTypeJSON}, jsonStart},
	}
	job := &batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	stored := map[string][]byte{}
	codecs := map[string]runtime.Codec{}
	for _, tc := range cases {
		o := NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.applyStorageCodec(); err != nil {
			t.Fatal(err)
		}
		mediaType := o.RecommendedOptions.Etcd.DefaultStorageMediaType
		codec := o.RecommendedOptions.Etcd.StorageConfig.Codec
		data, err := runtime.Encode(codec, job)
		if err != nil {
			t.Fatalf("%s: encoding: %v", mediaType, err)
		}
		if !bytes.HasPrefix(data, tc.wantPrefix) {
			t.Errorf("%s: stored %q, want it to start with %q", mediaType, data, tc.wantPrefix)
		}
		stored[mediaType], codecs[mediaType] = data, codec
	}
	for reader, codec := range codecs {
		for writer, data := range stored {
			obj, err := runtime.Decode(codec, data)
			if err != nil {
				t.Errorf("the %s codec cannot read %s: %v", reader, writer, err)
				continue
			}
			if got, ok := obj.(*batch.TensorFlowTrainingJob); !ok || got.Name != job.Name {
				t.Errorf("the %s codec read %s as %#v", reader, writer, obj)
			}
		}
	}
}

// TestStorageCodecCompactsReplicaSpecs: a job read from storage holds its
// replica specs in an array of exactly their number, and reads the same as
// it was written.
func TestStorageCodecCompactsReplicaSpecs(t *testing.T) {
	codec := defaultStorageCodec(t)
	for _, n := range []int{1, 3, 5} {
		job := &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
		for i := range n {
			job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, batch.ReplicaSpec{
				Type:     batch.ReplicaType(fmt.Sprintf("type-%d", i)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "i"}}}},
			})
		}
		obj, data := storageRoundTrip(t, codec, job)
		got := obj.(*batch.PyTorchTrainingJob).Spec.ReplicaSpecs
		if len(got) != n || cap(got) != n {
			t.Errorf("%d replica specs read back with len %d, cap %d", n, len(got), cap(got))
		}
		// Nothing else changes: the codec it wraps reads the same.
		plain, err := runtime.Decode(codec.(compactingCodec).Codec, data)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(obj, plain) {
			t.Errorf("%d replica specs: read back as\n%+v\nwant\n%+v", n, obj, plain)
		}
	}
}

// TestStorageCodecSharesManagedFields: jobs whose managedFields are the
// same read back sharing one copy of them.
func TestStorageCodecSharesManagedFields(t *testing.T) {
	codec := defaultStorageCodec(t)
	read := func(name, fields string) *batch.TensorFlowTrainingJob {
		job := &batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}}}}
		obj, _ := storageRoundTrip(t, codec, job)
		return obj.(*batch.TensorFlowTrainingJob)
	}
	raw := func(j *batch.TensorFlowTrainingJob) []byte { return j.ManagedFields[0].FieldsV1.GetRawBytes() }
	a, b := read("a", `{"f:spec":{}}`), read("b", `{"f:spec":{}}`)
	other := read("c", `{"f:status":{}}`)
	if string(raw(a)) != `{"f:spec":{}}` || string(raw(other)) != `{"f:status":{}}` {
		t.Fatalf("managedFields read back as %s and %s", raw(a), raw(other))
	}
	if &raw(a)[0] != &raw(b)[0] {
		t.Errorf("jobs with the same managedFields hold two copies")
	}
	if &raw(a)[0] == &raw(other)[0] {
		t.Errorf("jobs with different managedFields share one copy")
	}
}

func TestSharedBytesForgetsWhenFull(t *testing.T) {
	s := newSharedBytes(2)
	first := []byte("x")
	if got := s.get(first); &got[0] != &first[0] {
		t.Fatalf("the first copy is not kept")
	}
	if got := s.get([]byte("x")); &got[0] != &first[0] {
		t.Errorf("a second x did not get the first copy")
	}
	s.get([]byte("y"))
	s.get([]byte("z")) // full: forgets x and y
	if len(s.seen) != 1 {
		t.Errorf("%d contents kept after the reset, want 1", len(s.seen))
	}
	if got := s.get([]byte("x")); &got[0] == &first[0] {
		t.Errorf("x still shared after the reset")
	}
	if got := s.get(nil); got != nil {
		t.Errorf("get(nil) = %v", got)
	}
}

// defaultStorageCodec is the storage codec the server's defaults build.
func defaultStorageCodec(t *testing.T) runtime.Codec {
	t.Helper()
	o := NewOptions()
	if err := o.applyStorageCodec(); err != nil {
		t.Fatal(err)
	}
	return o.RecommendedOptions.Etcd.StorageConfig.Codec
}

// storageRoundTrip writes obj with codec and reads it back.
func storageRoundTrip(t *testing.T, codec runtime.Codec, obj runtime.Object) (runtime.Object, []byte) {
	t.Helper()
	data, err := runtime.Encode(codec, obj)
	if err != nil {
		t.Fatal(err)
	}
	back, err := runtime.Decode(codec, data)
	if err != nil {
		t.Fatal(err)
	}
	return back, data
}
