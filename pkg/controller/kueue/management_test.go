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

package kueue

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestDecideUnnamed(t *testing.T) {
	kueueDefault, err := labels.Parse(DefaultManagedJobsNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	team := map[string]string{corev1.LabelMetadataName: "team-a"}
	system := map[string]string{corev1.LabelMetadataName: "kube-system"}
	cases := map[string]struct {
		management  Management
		hasDefault  bool
		nsLabels    map[string]string
		nsErr       error
		want        Unnamed
		wantErr     bool
		wantNsReads int
	}{
		"Kueue's defaults, no default queue":          {Management{NamespaceSelector: kueueDefault}, false, team, nil, UnnamedRuns, false, 0},
		"Kueue's defaults, a default queue":           {Management{NamespaceSelector: kueueDefault}, true, team, nil, UnnamedInDefaultQueue, false, 1},
		"a default queue in an unmanaged namespace":   {Management{NamespaceSelector: kueueDefault}, true, system, nil, UnnamedRuns, false, 1},
		"managed without a queue name":                {Management{true, kueueDefault}, false, team, nil, UnnamedNeedsQueue, false, 1},
		"managed, a default queue wins":               {Management{true, kueueDefault}, true, team, nil, UnnamedInDefaultQueue, false, 1},
		"managed, but not this namespace":             {Management{true, kueueDefault}, false, system, nil, UnnamedRuns, false, 1},
		"managed, every namespace":                    {Management{ManageJobsWithoutQueueName: true}, false, system, nil, UnnamedNeedsQueue, false, 0},
		"the namespace cannot be read":                {Management{true, kueueDefault}, false, nil, errors.New("forbidden"), UnnamedRuns, true, 1},
		"no default queue, not managed: no ns lookup": {Management{NamespaceSelector: kueueDefault}, false, nil, errors.New("unread"), UnnamedRuns, false, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			got, err := tc.management.DecideUnnamed(tc.hasDefault, func() (map[string]string, error) {
				reads++
				return tc.nsLabels, tc.nsErr
			})
			if got != tc.want || (err != nil) != tc.wantErr || reads != tc.wantNsReads {
				t.Errorf("DecideUnnamed = %v, %v after %d namespace reads; want %v, error %v, %d reads",
					got, err, reads, tc.want, tc.wantErr, tc.wantNsReads)
			}
		})
	}
}

func TestMatchPodSets(t *testing.T) {
	podSet := func(name string, count int32, edits ...func(*kueuev1beta2.PodSet)) kueuev1beta2.PodSet {
		ps := kueuev1beta2.PodSet{Name: kueuev1beta2.PodSetReference(name), Count: count,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "train:1"}}}}}
		for _, e := range edits {
			e(&ps)
		}
		return ps
	}
	job := []kueuev1beta2.PodSet{podSet("master", 1), podSet("worker", 3)}
	cases := map[string]struct {
		workload []kueuev1beta2.PodSet
		want     string // "" for a match, else words of the difference
	}{
		"the same":                 {[]kueuev1beta2.PodSet{podSet("master", 1), podSet("worker", 3)}, ""},
		"other labels on the pods": {[]kueuev1beta2.PodSet{podSet("master", 1, func(p *kueuev1beta2.PodSet) { p.Template.Labels = map[string]string{"x": "y"} }), podSet("worker", 3)}, ""},
		"a pod set fewer":          {[]kueuev1beta2.PodSet{podSet("master", 1)}, "1 pod sets"},
		"another order":            {[]kueuev1beta2.PodSet{podSet("worker", 3), podSet("master", 1)}, "pod set 0 is worker"},
		"fewer workers":            {[]kueuev1beta2.PodSet{podSet("master", 1), podSet("worker", 1)}, "has 1 pods"},
		"a minimum count":          {[]kueuev1beta2.PodSet{podSet("master", 1), podSet("worker", 3, func(p *kueuev1beta2.PodSet) { p.MinCount = ptr.To[int32](1) })}, "minimum count"},
		"another image":            {[]kueuev1beta2.PodSet{podSet("master", 1, func(p *kueuev1beta2.PodSet) { p.Template.Spec.Containers[0].Image = "other" }), podSet("worker", 3)}, "other containers"},
		"an init container":        {[]kueuev1beta2.PodSet{podSet("master", 1), podSet("worker", 3, func(p *kueuev1beta2.PodSet) { p.Template.Spec.InitContainers = []corev1.Container{{Name: "i"}} })}, "init containers"},
		"a toleration":             {[]kueuev1beta2.PodSet{podSet("master", 1, func(p *kueuev1beta2.PodSet) { p.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu"}} }), podSet("worker", 3)}, "tolerations"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MatchPodSets(tc.workload, job)
			if (got == "") != (tc.want == "") || (tc.want != "" && !strings.Contains(got, tc.want)) {
				t.Errorf("MatchPodSets = %q, want %q", got, tc.want)
			}
		})
	}
}
