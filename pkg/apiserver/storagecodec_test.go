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
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// storageCodecs are the codec etcd's objects are read with and the plain
// one under it.
func storageCodecs(t testing.TB) (compacting compactingCodec, plain k8sruntime.Codec) {
	t.Helper()
	codec, _, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  k8sruntime.ContentTypeProtobuf,
		StorageSerializer: Codecs,
		StorageVersion:    v1beta1.SchemeGroupVersion,
		MemoryVersion:     batch.SchemeGroupVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	return newCompactingCodec(codec), codec
}

// storedJob is a finished TensorFlowTrainingJob of the benchmarks' shape
// (chief 1, ps 1, worker 3) as etcd holds it; arg goes into every
// container's arguments, so that jobs of different args have different
// templates.
func storedJob(t testing.TB, codec k8sruntime.Codec, i int, arg string) []byte {
	t.Helper()
	done := metav1.NewTime(time.Unix(1_800_000_000, 0))
	job := &v1beta1.TensorFlowTrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "TensorFlowTrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("job-%06d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("uid-%06d", i)),
			Generation: 1, CreationTimestamp: done, Labels: map[string]string{"team": "vision"},
		},
	}
	job.Status = v1beta1.TrainingJobStatus{
		ObservedGeneration: 1, Phase: v1beta1.JobSucceeded, StartTime: &done, CompletionTime: &done,
		Conditions: []metav1.Condition{
			{Type: v1beta1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "ReplicasCreated", Message: "every replica has its pod", LastTransitionTime: done, ObservedGeneration: 1},
			{Type: v1beta1.ConditionRunning, Status: metav1.ConditionFalse, Reason: "Succeeded", Message: "the job finished", LastTransitionTime: done, ObservedGeneration: 1},
			{Type: v1beta1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "the job succeeded", LastTransitionTime: done, ObservedGeneration: 1},
		},
	}
	job.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.tensorstack.dev/v1beta1", Time: &done,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicaSpecs":{}}}`)},
		{Manager: "training-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.tensorstack.dev/v1beta1",
			Time: &done, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`), Subresource: "status"},
	}
	for _, r := range []struct {
		typ string
		n   int32
	}{{"chief", 1}, {"ps", 1}, {"worker", 3}} {
		job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type: v1beta1.ReplicaType(r.typ), Replicas: ptr.To(r.n),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: v1beta1.TensorFlowContainerName, Image: "tensorstack/tensorflow:2.16",
				Command: []string{"python", "/workspace/train.py"}, Args: []string{"--type=" + r.typ, arg},
			}}}},
		})
		task := v1beta1.TaskStatus{Type: v1beta1.ReplicaType(r.typ)}
		for i := range r.n {
			task.ReplicaStatus = append(task.ReplicaStatus, v1beta1.ReplicaStatus{
				Name: v1beta1.PodName(job.Name, v1beta1.ReplicaType(r.typ), i), UID: types.UID(fmt.Sprintf("%s-%s-%d", job.UID, r.typ, i)),
				Phase: v1beta1.ReplicaDeleted,
				Containers: []v1beta1.ContainerStatus{{Name: v1beta1.TensorFlowContainerName, State: v1beta1.ContainerStateTerminated,
					Reason: "Completed", LastTermination: &v1beta1.ContainerTermination{ExitCode: 0, Reason: "Completed", FinishedAt: &done}}},
			})
		}
		job.Status.Tasks = append(job.Status.Tasks, task)
	}
	Scheme.Default(job)
	var buf bytes.Buffer
	if err := codec.Encode(job, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decodeJob(t testing.TB, codec k8sruntime.Decoder, data []byte) *batch.TensorFlowTrainingJob {
	t.Helper()
	obj, _, err := codec.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*batch.TensorFlowTrainingJob)
}

func TestCompactingCodecDecodesTheSameJob(t *testing.T) {
	compacting, plain := storageCodecs(t)
	for i, arg := range []string{"--lr=0.1", "--lr=0.1", "--lr=0.2"} {
		data := storedJob(t, plain, i, arg)
		got, want := decodeJob(t, compacting, data), decodeJob(t, plain, data)
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("job %d decodes otherwise through the compacting codec:\n got %+v\nwant %+v", i, got.Spec, want.Spec)
		}
		if n := len(got.Spec.ReplicaSpecs); cap(got.Spec.ReplicaSpecs) != n {
			t.Errorf("job %d: replica specs have room for %d, want exactly %d", i, cap(got.Spec.ReplicaSpecs), n)
		}
		st := got.Status
		lists := map[string][2]int{
			"status.conditions": {len(st.Conditions), cap(st.Conditions)},
			"status.tasks":      {len(st.Tasks), cap(st.Tasks)},
		}
		for i, task := range st.Tasks {
			lists[fmt.Sprintf("status.tasks[%d].replicaStatus", i)] = [2]int{len(task.ReplicaStatus), cap(task.ReplicaStatus)}
			for j, r := range task.ReplicaStatus {
				lists[fmt.Sprintf("status.tasks[%d].replicaStatus[%d].containers", i, j)] = [2]int{len(r.Containers), cap(r.Containers)}
			}
		}
		for path, lc := range lists {
			if lc[0] != lc[1] {
				t.Errorf("job %d: %s has room for %d, want exactly %d", i, path, lc[1], lc[0])
			}
		}
	}
}

func TestCompactingCodecSharesReplicaSpecs(t *testing.T) {
	compacting, plain := storageCodecs(t)
	a := decodeJob(t, compacting, storedJob(t, plain, 1, "--lr=0.1"))
	b := decodeJob(t, compacting, storedJob(t, plain, 2, "--lr=0.1"))
	other := decodeJob(t, compacting, storedJob(t, plain, 3, "--lr=0.2"))
	if &a.Spec.ReplicaSpecs[0] != &b.Spec.ReplicaSpecs[0] {
		t.Error("two jobs of the same replica specs hold two copies of them")
	}
	if &a.Spec.ReplicaSpecs[0] == &other.Spec.ReplicaSpecs[0] {
		t.Error("jobs of different args share one replica spec list")
	}
	if &a.Spec.ReplicaSpecs[0].Template.Spec.Containers[0] == &other.Spec.ReplicaSpecs[0].Template.Spec.Containers[0] {
		t.Error("templates of different args share their containers")
	}

	// The same templates under another replica count: the list differs, the
	// templates are shared.
	scaled := storedJob(t, plain, 4, "--lr=0.1")
	job := decodeJob(t, plain, scaled)
	job.Spec.ReplicaSpecs[2].Replicas = ptr.To[int32](8)
	var buf bytes.Buffer
	if err := plain.Encode(job, &buf); err != nil {
		t.Fatal(err)
	}
	c := decodeJob(t, compacting, buf.Bytes())
	if &c.Spec.ReplicaSpecs[0] == &a.Spec.ReplicaSpecs[0] {
		t.Fatal("jobs of different replica counts share one list")
	}
	if *c.Spec.ReplicaSpecs[2].Replicas != 8 || *a.Spec.ReplicaSpecs[2].Replicas != 3 {
		t.Fatalf("replicas %d and %d, want 8 and 3", *c.Spec.ReplicaSpecs[2].Replicas, *a.Spec.ReplicaSpecs[2].Replicas)
	}
	for i := range c.Spec.ReplicaSpecs {
		if &c.Spec.ReplicaSpecs[i].Template.Spec.Containers[0] != &a.Spec.ReplicaSpecs[i].Template.Spec.Containers[0] {
			t.Errorf("replica spec %d: the same template is held twice", i)
		}
	}
}

func TestCompactingCodecSharesWords(t *testing.T) {
	compacting, plain := storageCodecs(t)
	a := decodeJob(t, compacting, storedJob(t, plain, 1, "--lr=0.1"))
	b := decodeJob(t, compacting, storedJob(t, plain, 2, "--lr=0.2"))
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one shared copy", what, x, y)
		}
	}
	same("phase", string(a.Status.Phase), string(b.Status.Phase))
	same("condition message", a.Status.Conditions[2].Message, b.Status.Conditions[2].Message)
	ra, rb := a.Status.Tasks[2].ReplicaStatus[1], b.Status.Tasks[2].ReplicaStatus[0]
	same("replica phase", string(ra.Phase), string(rb.Phase))
	same("container state", string(ra.Containers[0].State), string(rb.Containers[0].State))
	same("termination reason", ra.Containers[0].LastTermination.Reason, rb.Containers[0].LastTermination.Reason)
	same("manager", a.ManagedFields[1].Manager, b.ManagedFields[1].Manager)
	if unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
		t.Error("two names share one copy")
	}

	words := newSharedWords()
	long := strings.Repeat("x", sharedWordLen+1)
	if got := words.word(long); unsafe.StringData(got) != unsafe.StringData(long) {
		t.Error("a long string was copied")
	}
	for i := range sharedWordsMax + 10 {
		words.word(fmt.Sprintf("w%d", i))
	}
	if n := len(words.seen); n > sharedWordsMax {
		t.Errorf("%d words kept, want at most %d", n, sharedWordsMax)
	}
}

// TestSpecKeyCoversEveryField fails when ReplicaSpec grows a field, which
// appendSpecKey must then tell apart too: two lists differing only in it
// would share one copy, and one job would read the other's value.
func TestSpecKeyCoversEveryField(t *testing.T) {
	fields := []string{}
	rt := reflect.TypeFor[batch.ReplicaSpec]()
	for i := range rt.NumField() {
		fields = append(fields, rt.Field(i).Name)
	}
	if want := []string{"Type", "Replicas", "Template", "RestartPolicy"}; !reflect.DeepEqual(fields, want) {
		t.Fatalf("batch.ReplicaSpec has fields %v; appendSpecKey knows %v", fields, want)
	}
	base := batch.ReplicaSpec{Type: "worker", Replicas: ptr.To[int32](1), RestartPolicy: batch.RestartPolicyNever}
	variants := map[string]batch.ReplicaSpec{}
	variants["base"] = base
	v := base
	v.Type = "ps"
	variants["type"] = v
	v = base
	v.Replicas = ptr.To[int32](2)
	variants["replicas"] = v
	v = base
	v.Replicas = nil
	variants["no replicas"] = v
	v = base
	v.RestartPolicy = batch.RestartPolicyOnFailure
	variants["restart policy"] = v
	keys := map[string]string{}
	for name, spec := range variants {
		for _, template := range []string{"", "t"} {
			k := string(appendSpecKey(nil, &spec, []byte(template)))
			if other, ok := keys[k]; ok {
				t.Errorf("%s with template %q has the key of %s", name, template, other)
			}
			keys[k] = name + "/" + template
		}
	}
}

func TestSharedSpecsAreBounded(t *testing.T) {
	compacting, plain := storageCodecs(t)
	for i := range sharedSpecsMax + 10 {
		decodeJob(t, compacting, storedJob(t, plain, i, fmt.Sprintf("--seed=%d", i)))
	}
	if n, m := len(compacting.specs.lists), len(compacting.specs.templates); n > sharedSpecsMax || m > sharedSpecsMax {
		t.Fatalf("%d lists and %d templates kept, want at most %d each", n, m, sharedSpecsMax)
	}
}

// BenchmarkStoredJobMemory reports the heap a decoded finished job holds, as
// the watch cache keeps it: jobs of one manifest (same), and jobs whose
// every template differs (distinct), through the compacting codec and the
// plain one.
func BenchmarkStoredJobMemory(b *testing.B) {
	const jobs = 5000
	compacting, plain := storageCodecs(b)
	for _, c := range []struct {
		name  string
		codec k8sruntime.Decoder
		arg   func(i int) string
	}{
		{"same/plain", plain, func(int) string { return "--lr=0.1" }},
		{"same/compacting", compacting, func(int) string { return "--lr=0.1" }},
		{"distinct/plain", plain, func(i int) string { return fmt.Sprintf("--seed=%d", i) }},
		{"distinct/compacting", compacting, func(i int) string { return fmt.Sprintf("--seed=%d", i) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			stored := make([][]byte, jobs)
			for i := range stored {
				stored[i] = storedJob(b, plain, i, c.arg(i))
			}
			b.ResetTimer()
			var perJob float64
			for range b.N {
				kept := make([]k8sruntime.Object, jobs)
				before := heapInUse()
				for i, data := range stored {
					kept[i] = decodeJob(b, c.codec, data)
				}
				perJob = float64(heapInUse()-before) / jobs
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(perJob, "heapB/job")
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkStoredJobDecode is the CPU of one job's decode, as a LIST that
// goes to etcd pays it for every item: plain, and with the sharing.
func BenchmarkStoredJobDecode(b *testing.B) {
	compacting, plain := storageCodecs(b)
	data := storedJob(b, plain, 1, "--lr=0.1")
	for _, c := range []struct {
		name  string
		codec k8sruntime.Decoder
	}{{"plain", plain}, {"compacting", compacting}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				decodeJob(b, c.codec, data)
			}
		})
	}
}
