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

package gang

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

func TestParse(t *testing.T) {
	for _, s := range []string{"auto", "workload", "coscheduling", "none"} {
		if g, err := Parse(s); err != nil || string(g) != s {
			t.Errorf("Parse(%q) = %q, %v", s, g, err)
		}
	}
	for _, s := range []string{"", "Auto", "volcano"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

// TestResolve decides auto and checks the named backends
// against what a fake discovery serves.
func TestResolve(t *testing.T) {
	workloadAPIList := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "workloads", Namespaced: true, Kind: "Workload"},
		{Name: "podgroups", Namespaced: true, Kind: "PodGroup"},
	}}
	podGroupsOnly := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "podgroups", Namespaced: true, Kind: "PodGroup"},
	}}
	coschedulingList := &metav1.APIResourceList{GroupVersion: "scheduling.x-k8s.io/v1alpha1", APIResources: []metav1.APIResource{
		{Name: "podgroups", Namespaced: true, Kind: "PodGroup"},
		{Name: "elasticquotas", Namespaced: true, Kind: "ElasticQuota"},
	}}
	coreList := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}}

	cases := []struct {
		name      string
		served    []*metav1.APIResourceList
		requested Scheduler
		want      Scheduler
		wantErr   bool
	}{
		{"auto prefers the Workload API", []*metav1.APIResourceList{coreList, workloadAPIList, coschedulingList}, SchedulerAuto, SchedulerWorkload, false},
		{"auto takes coscheduling without the Workload API", []*metav1.APIResourceList{coreList, coschedulingList}, SchedulerAuto, SchedulerCoscheduling, false},
		{"auto needs workloads, not just the group version", []*metav1.APIResourceList{podGroupsOnly}, SchedulerAuto, SchedulerNone, false},
		{"auto finds neither", []*metav1.APIResourceList{coreList}, SchedulerAuto, SchedulerNone, false},
		{"workload served", []*metav1.APIResourceList{workloadAPIList}, SchedulerWorkload, SchedulerWorkload, false},
		{"workload not served", []*metav1.APIResourceList{coschedulingList}, SchedulerWorkload, "", true},
		{"coscheduling served", []*metav1.APIResourceList{workloadAPIList, coschedulingList}, SchedulerCoscheduling, SchedulerCoscheduling, false},
		{"coscheduling not served", []*metav1.APIResourceList{workloadAPIList}, SchedulerCoscheduling, "", true},
		{"none asks nothing", nil, SchedulerNone, SchedulerNone, false},
		{"unknown", nil, "volcano", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := kubefake.NewClientset()
			client.Resources = tc.served
			got, err := Resolve(context.Background(), client.Discovery(), tc.requested)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("Resolve(%s) = %q, %v; want %q, error %v", tc.requested, got, err, tc.want, tc.wantErr)
			}
			if tc.requested == SchedulerNone && len(client.Actions()) != 0 {
				t.Errorf("none asked discovery: %v", client.Actions())
			}
		})
	}

	t.Run("a discovery failure is an error, not none", func(t *testing.T) {
		client := kubefake.NewClientset()
		client.PrependReactor("get", "resource", func(core.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		if got, err := Resolve(context.Background(), client.Discovery(), SchedulerAuto); err == nil {
			t.Fatalf("Resolve = %q without an error", got)
		}
	})
}

// TestNewRefusesUnresolved: New takes a resolved scheduler, and
// coscheduling needs the dynamic client.
func TestNewRefusesUnresolved(t *testing.T) {
	client := kubefake.NewClientset()
	for _, s := range []Scheduler{SchedulerAuto, SchedulerCoscheduling, "volcano"} {
		if b, err := New(s, Config{KubeClient: client}); err == nil {
			t.Errorf("New(%s) = %v without an error", s, b)
		}
	}
	for _, s := range []Scheduler{"", SchedulerNone} {
		if b, err := New(s, Config{KubeClient: client}); err != nil || b != nil {
			t.Errorf("New(%q) = %v, %v; want no backend", s, b, err)
		}
	}
}
