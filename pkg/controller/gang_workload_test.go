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

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/podbuilder"
)

// TestWorkloadShape checks the Workload and PodGroup built for each kind,
// and the pods that join the PodGroup.
func TestWorkloadShape(t *testing.T) {
	elastic := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 3).withGang("team-a", 100)
	elastic.job.(*v1beta1.PyTorchTrainingJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4),
	}
	cases := []struct {
		name     string
		job      v1beta1.TrainingJob
		kind     string
		minCount int32
		class    string
		members  []string
		others   []string
	}{
		{
			name: "TensorFlow: the evaluator is outside the gang",
			job: newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withReplicas("ps", 1).
				withReplicas("evaluator", 1).withGang("team-a", 60).obj(),
			kind: podbuilder.TensorFlowKind, minCount: 4, class: podbuilder.PriorityClassP75,
			members: []string{"j-chief-0", "j-ps-0", "j-worker-0", "j-worker-1"}, others: []string{"j-evaluator-0"},
		},
		{
			name: "TensorFlow without an evaluator",
			job:  newTFJob("j").withReplicas("worker", 3).withGang("team-a", 1).obj(),
			kind: podbuilder.TensorFlowKind, minCount: 3, class: podbuilder.PriorityClassP25,
			members: []string{"j-worker-0", "j-worker-1", "j-worker-2"},
		},
		{
			name: "PyTorch elastic: minCount is minReplicas",
			job:  elastic.obj(),
			kind: podbuilder.PyTorchKind, minCount: 2, class: podbuilder.PriorityClassP100,
			members: []string{"j-master-0", "j-worker-0", "j-worker-1", "j-worker-2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newGangFixture(t, gang.SchedulerWorkload, tc.job)
			f.step(tc.job)
			ctx := context.Background()
			wl, err := f.kubeClient.SchedulingV1beta1().Workloads("ns").Get(ctx, "j", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("no Workload: %v", err)
			}
			pg, err := f.kubeClient.SchedulingV1beta1().PodGroups("ns").Get(ctx, "j", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("no PodGroup: %v", err)
			}
			owner := jobOwner(tc.kind, tc.job)
			for _, m := range []metav1.ObjectMeta{wl.ObjectMeta, pg.ObjectMeta} {
				if len(m.OwnerReferences) != 1 || !equality.Semantic.DeepEqual(m.OwnerReferences[0], owner) {
					t.Errorf("owner references %+v, want the job as controller", m.OwnerReferences)
				}
				if m.Labels[v1beta1.LabelJobName] != "j" || m.Labels[v1beta1.LabelJobKind] != tc.kind {
					t.Errorf("labels %v, want the job's", m.Labels)
				}
				if m.Annotations[gang.AnnotationQueue] != "team-a" || m.Annotations[gang.AnnotationPriority] != itoa(tc.job.CommonSpec().Scheduler.T9kScheduler.Priority) {
					t.Errorf("annotations %v, want the queue and priority", m.Annotations)
				}
			}
			wantWorkload := schedulingv1beta1.WorkloadSpec{
				ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: v1beta1.GroupName, Kind: tc.kind, Name: "j"},
				PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
					Name:              gang.WorkloadTemplateName,
					SchedulingPolicy:  schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: tc.minCount}},
					DisruptionMode:    &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}},
					PriorityClassName: tc.class,
				}},
			}
			if !equality.Semantic.DeepEqual(wl.Spec, wantWorkload) {
				t.Errorf("Workload spec %+v, want %+v", wl.Spec, wantWorkload)
			}
			wantPodGroup := schedulingv1beta1.PodGroupSpec{
				WorkloadRef:       &schedulingv1beta1.WorkloadReference{WorkloadName: "j", TemplateName: gang.WorkloadTemplateName},
				SchedulingPolicy:  schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: tc.minCount}},
				DisruptionMode:    &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}},
				PriorityClassName: tc.class,
			}
			if !equality.Semantic.DeepEqual(pg.Spec, wantPodGroup) {
				t.Errorf("PodGroup spec %+v, want %+v", pg.Spec, wantPodGroup)
			}
			if pg.Spec.Priority != nil {
				t.Errorf("the PodGroup sets spec.priority, which the Priority admission plugin refuses")
			}

			f.mustSync(tc.job)
			checkGangPods(t, gang.SchedulerWorkload, f.createdPods(), tc.members, tc.others, tc.class)
			for _, p := range f.createdPods() {
				if p.Spec.SchedulerName != "" {
					t.Errorf("pod %s: schedulerName %q, want the default scheduler", p.Name, p.Spec.SchedulerName)
				}
			}
		})
	}
}

// TestWorkloadResize: changing the replicas resizes the Workload's template
// (the gang's size) and the PodGroup (what must be placed now).
func TestWorkloadResize(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 3).withGang("team-a", 0).obj()
	f := newGangFixture(t, gang.SchedulerWorkload, job)
	f.startGang(job)

	smaller := f.job(job)
	smaller.CommonSpec().ReplicaSpecs[1].Replicas = ptr.To[int32](1)
	f.updateJob(smaller)
	f.mustSync(smaller)
	if got := f.gangActions(); !equalStrings(got, []string{"patch podgroups", "patch workloads"}) {
		t.Fatalf("group calls %v, want both resized", got)
	}
	f.observe()
	wl, err := f.kubeClient.SchedulingV1beta1().Workloads("ns").Get(context.Background(), "j", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := wl.Spec.PodGroupTemplates
	if len(tmpl) != 1 || tmpl[0].SchedulingPolicy.Gang.MinCount != 2 || tmpl[0].DisruptionMode == nil || tmpl[0].DisruptionMode.All == nil {
		t.Errorf("Workload templates %+v, want one of minCount 2, disruption All", tmpl)
	}
	if n, _ := f.podGroupMinCount("j"); n != 2 {
		t.Errorf("PodGroup minCount %d, want 2", n)
	}
}
