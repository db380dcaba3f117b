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

package controller

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/podbuilder"
)

// TestCoschedulingShape checks the PodGroup built for each kind, and the
// pods: members labelled with it, every pod for the coscheduling scheduler.
func TestCoschedulingShape(t *testing.T) {
	elastic := newPyTorchJob("j").withReplicas("worker", 4).withGang("team-b", 30)
	elastic.job.(*v1beta1.PyTorchTrainingJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4),
	}
	cases := []struct {
		name      string
		job       v1beta1.TrainingJob
		kind      string
		minMember int64
		class     string
		members   []string
		others    []string
	}{
		{
			name: "TensorFlow: the evaluator is outside the gang",
			job: newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withReplicas("evaluator", 1).
				withGang("team-b", 80).obj(),
			kind: podbuilder.TensorFlowKind, minMember: 3, class: podbuilder.PriorityClassP100,
			members: []string{"j-chief-0", "j-worker-0", "j-worker-1"}, others: []string{"j-evaluator-0"},
		},
		{
			name: "PyTorch elastic: minMember is minReplicas",
			job:  elastic.obj(),
			kind: podbuilder.PyTorchKind, minMember: 2, class: podbuilder.PriorityClassP50,
			members: []string{"j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newGangFixture(t, gang.SchedulerCoscheduling, tc.job)
			f.step(tc.job)
			pg, err := f.dynamicClient.Resource(gang.CoschedulingPodGroupGVR).Namespace("ns").Get(context.Background(), "j", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("no PodGroup: %v", err)
			}
			if pg.GetAPIVersion() != "scheduling.x-k8s.io/v1alpha1" || pg.GetKind() != "PodGroup" {
				t.Errorf("PodGroup is %s %s", pg.GetAPIVersion(), pg.GetKind())
			}
			owner := jobOwner(tc.kind, tc.job)
			if refs := pg.GetOwnerReferences(); len(refs) != 1 || !equality.Semantic.DeepEqual(refs[0], owner) {
				t.Errorf("owner references %+v, want the job as controller", refs)
			}
			if l := pg.GetLabels(); l[v1beta1.LabelJobName] != "j" || l[v1beta1.LabelJobKind] != tc.kind {
				t.Errorf("labels %v, want the job's", l)
			}
			if a := pg.GetAnnotations(); a[gang.AnnotationQueue] != "team-b" ||
				a[gang.AnnotationPriority] != itoa(tc.job.CommonSpec().Scheduler.T9kScheduler.Priority) {
				t.Errorf("annotations %v, want the queue and priority", a)
			}
			spec, _ := pg.Object["spec"].(map[string]any)
			if len(spec) != 1 || minMember(pg) != tc.minMember {
				t.Errorf("spec %v, want only minMember %d", spec, tc.minMember)
			}

			f.mustSync(tc.job)
			checkGangPods(t, gang.SchedulerCoscheduling, f.createdPods(), tc.members, tc.others, tc.class)
			for _, p := range f.createdPods() {
				if p.Spec.SchedulerName != gang.DefaultCoschedulingSchedulerName {
					t.Errorf("pod %s: schedulerName %q, want %s", p.Name, p.Spec.SchedulerName, gang.DefaultCoschedulingSchedulerName)
				}
				if p.Spec.SchedulingGroup != nil {
					t.Errorf("pod %s has a Workload API schedulingGroup with coscheduling", p.Name)
				}
			}
		})
	}
}

// TestCoschedulingSchedulerName: the pods go to the scheduler named in the
// options, whatever their template says.
func TestCoschedulingSchedulerName(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withGang("team-b", 0)
	job.replica("worker").Template.Spec.SchedulerName = "my-scheduler"
	obj := job.obj()
	f := newGangFixtureWithOptions(t, gang.SchedulerCoscheduling, func(c *gang.Config) { c.CoschedulingSchedulerName = "gang-scheduler" }, obj)
	f.step(obj)
	f.mustSync(obj)
	if p := f.createdPods(); len(p) != 1 || p[0].Spec.SchedulerName != "gang-scheduler" {
		t.Fatalf("pods %+v, want one for gang-scheduler", p)
	}
}
