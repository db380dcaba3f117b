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

package benchkit

import (
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"time"

	"tensorstack.dev/training/internal/localcluster"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",group="kubeflow.org",resource="tfjobs",subresource="status",verb="PUT"} 12
apiserver_request_total{code="409",group="kubeflow.org",resource="tfjobs",subresource="status",verb="PUT"} 3
apiserver_request_total{code="200",group="kubeflow.org",resource="tfjobs",subresource="",verb="LIST"} 7
apiserver_request_total{code="201",group="kubeflow.org",resource="tfjobs",subresource="",verb="POST"} 5 1700000000000
weird_label{v="a \"quoted\" \\ value, with comma"} 1.5e+01
no_labels 42
`
	ss, err := ParseMetrics([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 6 {
		t.Fatalf("parsed %d samples, want 6: %+v", len(ss), ss)
	}
	writes := ss.Sum("apiserver_request_total", func(l map[string]string) bool {
		return l["subresource"] == "status" && !ReadOnlyVerb(l["verb"])
	})
	if writes != 15 {
		t.Errorf("status writes = %v, want 15", writes)
	}
	if got := ss.Sum("apiserver_request_total", func(l map[string]string) bool { return l["code"] == "409" }); got != 3 {
		t.Errorf("conflicts = %v, want 3", got)
	}
	if got := ss.Sum("apiserver_request_total", nil); got != 27 {
		t.Errorf("all = %v, want 27", got)
	}
	if ss[4].Labels["v"] != `a "quoted" \ value, with comma` || ss[4].Value != 15 {
		t.Errorf("escaped label: %+v", ss[4])
	}
	if ss[5].Name != "no_labels" || ss[5].Value != 42 {
		t.Errorf("no labels: %+v", ss[5])
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestTable(t *testing.T) {
	tab := Table{Header: []string{"metric", "a"}}
	tab.Add("creates/s", "1.00×")
	var b strings.Builder
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "| metric    | a     |\n|-----------|-------|\n| creates/s | 1.00× |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestLoadStack(t *testing.T) {
	dir := t.TempDir()
	settings, err := localcluster.SettingsFromEnv(func(name string) (string, bool) {
		return map[string]string{"LOCAL_TRAINING_PORT": "18444", "LOCAL_TRAINING_APISERVER_EXTRA_ARGS": "--a --b"}[name], true
	})
	if err != nil {
		t.Fatal(err)
	}
	c := localcluster.New(settings, localcluster.Paths{Repo: dir, Dir: dir}, &localcluster.RealHost{Out: io.Discard}, 0)
	if err := c.SaveState(); err != nil {
		t.Fatal(err)
	}
	s, err := LoadStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Port("LOCAL_TRAINING_PORT"); err != nil || p != 18444 {
		t.Errorf("port = %d, %v", p, err)
	}
	if v := s.Settings["LOCAL_SKIP_TRAINING"]; v != "0" {
		t.Errorf("LOCAL_SKIP_TRAINING = %q, want the default 0", v)
	}
	if v := s.Settings["LOCAL_TRAINING_APISERVER_EXTRA_ARGS"]; v != "--a --b" {
		t.Errorf("LOCAL_TRAINING_APISERVER_EXTRA_ARGS = %q", v)
	}
	if _, err := s.Port("LOCAL_NO_SUCH_PORT"); err == nil {
		t.Error("an unknown setting gave no error")
	}
}

func TestCPUSecondsOfSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := CPUSeconds(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	st, err := readStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st["VmRSS"] <= 0 || st["VmHWM"] < st["VmRSS"] {
		t.Errorf("VmRSS %d, VmHWM %d", st["VmRSS"], st["VmHWM"])
	}
}

func TestKubeflowJobMatchesOurs(t *testing.T) {
	ours := OurJob("ns", "j", JobOptions{ExitAfter: "20s"})
	kf, err := KubeflowJob("ns", "j", JobOptions{Paused: true, ExitAfter: "20s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ours.Spec.ReplicaSpecs) != len(Shape) {
		t.Fatalf("ours has %d replica specs", len(ours.Spec.ReplicaSpecs))
	}
	for i, r := range Shape {
		containers, _, _ := unstructured.NestedSlice(kf.Object, "spec", "tfReplicaSpecs", r.Kubeflow, "template", "spec", "containers")
		if len(containers) != 1 || containers[0].(map[string]interface{})["name"] != "tensorflow" {
			t.Errorf("TFJob's %s containers: %v", r.Kubeflow, containers)
		}
		ann, _, _ := unstructured.NestedStringMap(kf.Object, "spec", "tfReplicaSpecs", r.Kubeflow, "template", "metadata", "annotations")
		if !reflect.DeepEqual(ann, ours.Spec.ReplicaSpecs[i].Template.Annotations) {
			t.Errorf("TFJob's %s annotations %v, ours %v", r.Kubeflow, ann, ours.Spec.ReplicaSpecs[i].Template.Annotations)
		}
		n, _, _ := unstructured.NestedInt64(kf.Object, "spec", "tfReplicaSpecs", r.Kubeflow, "replicas")
		if int32(n) != r.Replicas || *ours.Spec.ReplicaSpecs[i].Replicas != r.Replicas {
			t.Errorf("%s replicas: TFJob %d, ours %d, want %d", r.Kubeflow, n, *ours.Spec.ReplicaSpecs[i].Replicas, r.Replicas)
		}
	}
	if s, _, _ := unstructured.NestedBool(kf.Object, "spec", "runPolicy", "suspend"); !s {
		t.Error("TFJob not suspended")
	}
	if PodsPerJob() != 5 {
		t.Errorf("PodsPerJob = %d", PodsPerJob())
	}
}

func TestEnvSettings(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
	}{{"", 7}, {"0", 0}, {"12", 12}, {"-1", 7}, {"many", 7}} {
		t.Setenv("BENCH_TEST_COUNT", tc.value)
		if got := IntEnv("BENCH_TEST_COUNT", 7); got != tc.want {
			t.Errorf("IntEnv with %q = %d, want %d", tc.value, got, tc.want)
		}
	}
	for _, tc := range []struct {
		value string
		want  bool
	}{{"", true}, {"0", false}, {"1", true}, {"false", false}, {"maybe", true}} {
		t.Setenv("BENCH_TEST_SWITCH", tc.value)
		if got := BoolEnv("BENCH_TEST_SWITCH", true); got != tc.want {
			t.Errorf("BoolEnv with %q = %t, want %t", tc.value, got, tc.want)
		}
	}
}
