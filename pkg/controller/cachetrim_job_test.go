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
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestTrimFinishedJob: a finished job keeps its metadata (without the
// applied manifest and managedFields), its status and its spec but for the
// pod templates, of which the containers' names and ports stay; a job still
// running is left whole.
func TestTrimFinishedJob(t *testing.T) {
	build := func(phase v1beta1.JobPhase) *v1beta1.TensorFlowTrainingJob {
		job := newTFJob("j").withReplicas("worker", 2).withPort("worker", "tfjob-port", 3333).withSidecar("worker").
			withInitContainer("worker").withTTL(60).withTensorBoard("t9k://pvc/logs/run").obj().(*v1beta1.TensorFlowTrainingJob)
		job.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"big":"manifest"}`, "team": "vision"}
		job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		c := &job.Spec.ReplicaSpecs[0].Template.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "DATA", Value: "/data"}}
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		job.Spec.ReplicaSpecs[0].Template.Spec.Volumes = []corev1.Volume{{Name: "data"}}
		job.Spec.ReplicaSpecs[0].Template.Labels = map[string]string{"app": "train"}
		job.Status = v1beta1.TrainingJobStatus{Phase: phase, BackoffCount: 1,
			Tasks: []v1beta1.TaskStatus{{Type: "worker", ReplicaStatus: []v1beta1.ReplicaStatus{{Name: "j-worker-0", Phase: v1beta1.ReplicaSucceeded}}}}}
		return job
	}

	for _, phase := range []v1beta1.JobPhase{v1beta1.JobSucceeded, v1beta1.JobFailed} {
		full := build(phase)
		got, err := trimForCache(full.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		job := got.(*v1beta1.TensorFlowTrainingJob)
		want := full.DeepCopy()
		want.ManagedFields = nil
		want.Annotations = map[string]string{"team": "vision"}
		spec := &want.Spec.ReplicaSpecs[0]
		spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: spec.Template.Spec.InitContainers[0].Name}},
			Containers: []corev1.Container{
				{Name: v1beta1.TensorFlowContainerName, Ports: spec.Template.Spec.Containers[0].Ports},
				{Name: spec.Template.Spec.Containers[1].Name},
			},
		}}
		if !equality.Semantic.DeepEqual(job, want) {
			t.Errorf("%s job trimmed to\n%+v\nwant\n%+v", phase, job, want)
		}
		if full.Annotations[corev1.LastAppliedConfigAnnotation] == "" {
			t.Errorf("%s: the trim changed the caller's annotations map", phase)
		}
	}

	running := build(v1beta1.JobRunning)
	got, _ := trimForCache(running.DeepCopy())
	want := running.DeepCopy()
	want.ManagedFields = nil
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("a running job was trimmed beyond its managedFields: %+v", got)
	}
}

// TestTrimmedFinishedJobReconcilesAlike: the controller does the same with
// a finished job trimmed in its cache as with the whole job. Each scenario
// runs twice, once with the informers' transform and once without, and
// every write the controller makes after the job finished (creates,
// patches, deletes, of pods, Services, TensorBoard, the job) must be the
// same. A field trimFinishedJob drops that the controller reads shows up
// here as a difference.
func TestTrimmedFinishedJobReconcilesAlike(t *testing.T) {
	scenarios := map[string]struct {
		job    func() v1beta1.TrainingJob
		finish func(f *fixture)
	}{
		"TensorFlow, clean up all, TTL": {
			job: func() v1beta1.TrainingJob {
				return newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withPort("worker", "tfjob-port", 3333).
					withCleanUp(v1beta1.CleanUpPolicyAll).withTTL(100).withTensorBoard("t9k://pvc/logs/run").obj()
			},
			finish: func(f *fixture) { f.setPod("j-chief-0", succeeded) },
		},
		"PyTorch torchrun, unfinished workers removed": {
			job: func() v1beta1.TrainingJob {
				return newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 3).
					withTorchrun(v1beta1.TorchrunConfig{Enabled: true, ProcPerNode: "2"}).withCleanUp(v1beta1.CleanUpPolicyUnfinished).
					withTTL(3600).obj()
			},
			finish: func(f *fixture) { f.setPod("j-master-0", succeeded) },
		},
		"PyTorch failed, pods kept": {
			job: func() v1beta1.TrainingJob {
				return newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withSidecar("worker").
					withCleanUp(v1beta1.CleanUpPolicyNone).withBackoffLimit(0).withTTL(3600).obj()
			},
			finish: func(f *fixture) { f.setPod("j-worker-0", failed(2)) },
		},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			run := func(untrimmed bool) ([]string, *v1beta1.TrainingJobStatus) {
				job := sc.job()
				f := newFixture(t, job)
				f.untrimmedJobs = untrimmed
				f.start(job)
				sc.finish(f)
				var log []string
				step := func() {
					f.mustSync(job)
					log = append(log, writes(f.kubeClient.Actions())...)
					log = append(log, writes(f.jobClient.Actions())...)
					f.observe()
				}
				step() // the job finishes
				if !f.status(job).Phase.IsFinished() {
					t.Fatalf("the job did not finish: %+v", f.status(job))
				}
				log = nil // from here on the cache holds a finished job
				for range 3 {
					f.setAll(func(p *corev1.Pod) {
						if p.DeletionTimestamp == nil {
							succeeded(p)
						}
					})
					step()
					f.clock.Step(time.Minute)
				}
				f.clock.Step(time.Hour)
				step()
				if !f.jobExists(job) {
					return log, nil
				}
				return log, f.status(job)
			}
			wholeLog, wholeStatus := run(true)
			trimmedLog, trimmedStatus := run(false)
			if len(wholeLog) == 0 {
				t.Fatalf("the scenario wrote nothing after the job finished: it shows nothing")
			}
			if !slices.Equal(wholeLog, trimmedLog) {
				t.Errorf("writes with the whole job:\n%v\nwith the trimmed job:\n%v", wholeLog, trimmedLog)
			}
			if !equality.Semantic.DeepEqual(wholeStatus, trimmedStatus) {
				t.Errorf("final status with the whole job:\n%+v\nwith the trimmed job:\n%+v", wholeStatus, trimmedStatus)
			}
		})
	}
}

// writes describes the writes among a client's actions.
func writes(actions []core.Action) []string {
	var out []string
	for _, a := range actions {
		what := fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		switch a := a.(type) {
		case core.PatchAction:
			out = append(out, fmt.Sprintf("%s %s %s", what, a.GetName(), a.GetPatch()))
		case core.DeleteAction:
			out = append(out, what+" "+a.GetName())
		case core.CreateAction: // creates and updates
			name := ""
			if o, ok := a.GetObject().(metav1.Object); ok {
				name = o.GetName()
			}
			out = append(out, what+" "+name)
		}
	}
	return out
}
