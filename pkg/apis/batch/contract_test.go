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

package batch

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNames(t *testing.T) {
	cases := []struct {
		job, replicaType string
		index            int32
		hostname, pod    string
	}{
		{"mnist", "worker", 0, "worker-0", "mnist-worker-0"},
		{"mnist", "chief", 12, "chief-12", "mnist-chief-12"},
		{"j", "my-type", 999, "my-type-999", "j-my-type-999"},
		{"j", "ps", math.MaxInt32, "ps-2147483647", "j-ps-2147483647"},
	}
	for _, tc := range cases {
		if got := Hostname(tc.replicaType, tc.index); got != tc.hostname {
			t.Errorf("Hostname(%q, %d) = %q, want %q", tc.replicaType, tc.index, got, tc.hostname)
		}
		if got := PodName(tc.job, tc.replicaType, tc.index); got != tc.pod {
			t.Errorf("PodName(%q, %q, %d) = %q, want %q", tc.job, tc.replicaType, tc.index, got, tc.pod)
		}
	}
	if got := TensorBoardName("mnist"); got != "mnist-tensorboard" {
		t.Errorf("TensorBoardName = %q", got)
	}
}

func TestReplicasOf(t *testing.T) {
	cases := []struct {
		replicas *int32
		want     int32
	}{
		{nil, 1},
		{ptr.To[int32](0), 0},
		{ptr.To[int32](3), 3},
		{ptr.To[int32](-1), -1},
	}
	for _, tc := range cases {
		if got := ReplicasOrDefault(tc.replicas); got != tc.want {
			t.Errorf("ReplicasOrDefault(%v) = %d, want %d", ptr.Deref(tc.replicas, -99), got, tc.want)
		}
		if got := ReplicasOf(&ReplicaSpec{Replicas: tc.replicas}); got != tc.want {
			t.Errorf("ReplicasOf(%v) = %d, want %d", ptr.Deref(tc.replicas, -99), got, tc.want)
		}
	}
	// TotalReplicas counts an unset count as DefaultReplicas and a negative
	// one as none.
	specs := []ReplicaSpec{{}, {Replicas: ptr.To[int32](4)}, {Replicas: ptr.To[int32](-7)}, {Replicas: ptr.To[int32](0)}}
	if got := TotalReplicas(specs); got != 5 {
		t.Errorf("TotalReplicas = %d, want 5", got)
	}
}

func TestTrainingContainer(t *testing.T) {
	containers := func(names ...string) []corev1.Container {
		var cs []corev1.Container
		for _, n := range names {
			cs = append(cs, corev1.Container{Name: n})
		}
		return cs
	}
	cases := []struct {
		containers []corev1.Container
		name       string
		want       int
	}{
		{nil, TensorFlowContainerName, -1},
		{containers("main"), TensorFlowContainerName, 0},
		{containers("sidecar", "tensorflow"), TensorFlowContainerName, 1},
		{containers("sidecar", "tensorflow"), PyTorchContainerName, 0},
		{containers("logger", "pytorch", "pytorch"), PyTorchContainerName, 1},
	}
	for _, tc := range cases {
		if got := TrainingContainer(tc.containers, tc.name); got != tc.want {
			t.Errorf("TrainingContainer(%v, %q) = %d, want %d", tc.containers, tc.name, got, tc.want)
		}
	}
}

func TestPortNames(t *testing.T) {
	if got := TensorFlowPortNames(); !slices.Equal(got, []string{"tensorflow", "tfjob-port"}) {
		t.Errorf("TensorFlowPortNames = %q", got)
	}
	if got := PyTorchPortNames(); !slices.Equal(got, []string{"pytorch", "pytorchjob-port"}) {
		t.Errorf("PyTorchPortNames = %q", got)
	}
	// Every call returns a list of its own: a caller may not change
	// another's.
	TensorFlowPortNames()[0] = "changed"
	if TensorFlowPortNames()[0] != "tensorflow" {
		t.Errorf("TensorFlowPortNames shares its list")
	}
	if TensorFlowDefaultPort != 2222 || PyTorchDefaultPort != 23456 {
		t.Errorf("default ports %d, %d", TensorFlowDefaultPort, PyTorchDefaultPort)
	}
}

func TestParseFileset(t *testing.T) {
	cases := []struct {
		fileset, pvc, path, err string
	}{
		{"t9k://pvc/logs/mnist/run1", "logs", "mnist/run1", ""},
		{"t9k://pvc/logs/b/", "logs", "b/", ""},
		{"t9k://pvc/other", "other", "", ""},
		{"t9k://pvc/logs/train/../../etc", "logs", "train/../../etc", ""},
		{"s3://bucket/logs", "", "", "must have the form t9k://pvc/<pvc-name>/<path>"},
		{"pvc://logs/train", "", "", "must have the form t9k://pvc/<pvc-name>/<path>"},
		{"t9k://pvc//train", "", "", "must have the form t9k://pvc/<pvc-name>/<path>: the PVC name is missing"},
		{"t9k://pvc/", "", "", "must have the form t9k://pvc/<pvc-name>/<path>: the PVC name is missing"},
	}
	for _, tc := range cases {
		pvc, path, err := ParseFileset(tc.fileset)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if pvc != tc.pvc || path != tc.path || errText != tc.err {
			t.Errorf("ParseFileset(%q) = %q, %q, %q; want %q, %q, %q", tc.fileset, pvc, path, errText, tc.pvc, tc.path, tc.err)
		}
	}
}

func TestFilesetErrors(t *testing.T) {
	const form = "must have the form t9k://pvc/<pvc-name>/<path>"
	cases := []struct {
		name, fileset string
		want          []string
	}{
		{"valid", "t9k://pvc/mnist-logs/train", nil},
		{"valid, trailing slash", "t9k://pvc/mnist-logs/eval/", nil},
		{"dots in names", "t9k://pvc/logs.v2/run..1/./x", nil},
		{"another scheme", "pvc://logs/train", []string{form}},
		{"no PVC name", "t9k://pvc//train", []string{form + ": the PVC name is missing"}},
		{"nothing after the prefix", "t9k://pvc/", []string{form + ": the PVC name is missing", form + ": the path within the PVC is missing"}},
		{"invalid PVC name", "t9k://pvc/Logs_PVC/train", []string{`PVC name "Logs_PVC": `}},
		{"no path", "t9k://pvc/logs", []string{form + ": the path within the PVC is missing"}},
		{"empty path", "t9k://pvc/logs/", []string{form + ": the path within the PVC is missing"}},
		{"leaving the PVC", "t9k://pvc/logs/train/../../etc", []string{"the path within the PVC may not contain '..'"}},
		{"NUL in the path", "t9k://pvc/logs/a\x00b", []string{"the path within the PVC may not contain NUL characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FilesetErrors(tc.fileset)
			if len(got) != len(tc.want) {
				t.Fatalf("FilesetErrors(%q) = %q, want %q", tc.fileset, got, tc.want)
			}
			for i := range got {
				// A DNS-1123 message is apimachinery's; only its start is ours.
				if !strings.HasPrefix(got[i], tc.want[i]) || (!strings.HasPrefix(tc.want[i], "PVC name") && got[i] != tc.want[i]) {
					t.Errorf("FilesetErrors(%q)[%d] = %q, want %q", tc.fileset, i, got[i], tc.want[i])
				}
			}
			// ParseFileset fails exactly where the location cannot be split,
			// with FilesetErrors' first message.
			_, _, err := ParseFileset(tc.fileset)
			unsplittable := len(got) > 0 && (got[0] == form || got[0] == form+": the PVC name is missing")
			if unsplittable != (err != nil) || (err != nil && err.Error() != got[0]) {
				t.Errorf("ParseFileset(%q) error %v, FilesetErrors %q", tc.fileset, err, got)
			}
		})
	}
}

func TestElasticTotal(t *testing.T) {
	p := func(n int32) *int32 { return &n }
	cases := []struct {
		name                 string
		requested            int64
		minR, maxR, expected *int32
		want                 int64
	}{
		{"expected decides", 2, p(1), p(4), p(3), 3},
		{"requested within range", 2, p(1), p(4), nil, 2},
		{"requested above max", 9, p(1), p(4), nil, 4},
		{"requested below min", 1, p(3), p(4), nil, 3},
		{"no ends", 5, nil, nil, nil, 5},
	}
	for _, tc := range cases {
		if got := ElasticTotal(tc.requested, tc.minR, tc.maxR, tc.expected); got != tc.want {
			t.Errorf("%s: ElasticTotal = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestElasticScaledType(t *testing.T) {
	p := func(n int32) *int32 { return &n }
	spec := func(typ ReplicaType, n int32) ReplicaSpec { return ReplicaSpec{Type: typ, Replicas: p(n)} }
	cases := []struct {
		name        string
		specs       []ReplicaSpec
		masterFirst bool
		scaled      int
		fixed       int64
	}{
		{"one type", []ReplicaSpec{spec("worker", 2)}, true, 0, 0},
		{"master and workers", []ReplicaSpec{spec("master", 1), spec("worker", 3)}, true, 1, 1},
		{"master listed last", []ReplicaSpec{spec("worker", 3), spec("master", 1)}, true, 0, 1},
		{"a type named master, in list order", []ReplicaSpec{spec("worker", 3), spec("master", 1)}, false, 1, 3},
		{"three types", []ReplicaSpec{spec("master", 1), spec("ps", 2), spec("worker", 3)}, true, 2, 3},
		{"master alone", []ReplicaSpec{spec("master", 1)}, true, 0, 0},
		{"none", nil, true, -1, 0},
	}
	for _, tc := range cases {
		scaled, fixed := ElasticScaledType(tc.specs, tc.masterFirst)
		if scaled != tc.scaled || fixed != tc.fixed {
			t.Errorf("%s: ElasticScaledType = %d, %d; want %d, %d", tc.name, scaled, fixed, tc.scaled, tc.fixed)
		}
	}
}

func TestRunLength(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	cases := []struct {
		name              string
		start, completion *metav1.Time
		want              time.Duration
		started           bool
	}{
		{"not started", nil, nil, 0, false},
		{"running", at(90 * time.Minute), nil, 90 * time.Minute, true},
		{"finished", at(3 * time.Hour), at(150 * time.Minute), 30 * time.Minute, true},
	}
	for _, tc := range cases {
		if got, started := RunLength(tc.start, tc.completion, now); got != tc.want || started != tc.started {
			t.Errorf("%s: RunLength = %v, %v; want %v, %v", tc.name, got, started, tc.want, tc.started)
		}
	}
}
