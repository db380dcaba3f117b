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

package validation

import (
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateSpecUpdate checks the parts of the shared spec that are fixed once
// the job exists, and those that may change only while the job has no pods.
// oldStatus is the stored job's status: a spec update never changes it.
//
// The replica types and their order are fixed because pod names, hostnames,
// ranks and the cluster layout every replica was given are built from them.
// The replica counts and pod templates shape the pods; they may change only
// while no pod built from them runs (validateTopologyUpdate). The resume
// settings are fixed as the API promises.
func validateSpecUpdate(spec, old *batch.TrainingJobSpec, oldStatus *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	replicasPath := fldPath.Child("replicaSpecs")
	if len(spec.ReplicaSpecs) != len(old.ReplicaSpecs) {
		allErrs = append(allErrs, field.Forbidden(replicasPath, fmt.Sprintf(
			"replica types cannot be added or removed once the job exists; they are [%s]", typeList(old.ReplicaSpecs))))
	} else {
		for i := range spec.ReplicaSpecs {
			if t, was := spec.ReplicaSpecs[i].Type, old.ReplicaSpecs[i].Type; t != was {
				allErrs = append(allErrs, field.Invalid(replicasPath.Index(i).Child("type"), string(t), fmt.Sprintf(
					"cannot change once the job exists (it was %q): replica types and their order are fixed", was)))
			}
		}
		allErrs = append(allErrs, validateTopologyUpdate(spec, old, oldStatus, replicasPath)...)
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(resumeSpecsOf(spec), resumeSpecsOf(old),
		fldPath.Child("runMode", "pause", "resumeSpecs"))...)
	// Who runs the job cannot change under it: two controllers would act on
	// it, or none.
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(ptr.Deref(spec.ManagedBy, ""), ptr.Deref(old.ManagedBy, ""),
		fldPath.Child("managedBy"))...)
	return allErrs
}

// validateTopologyUpdate refuses a change of a replica count or a pod
// template (spec.replicaSpecs[i].replicas, spec.replicaSpecs[i].template)
// while the job has, or may have, pods built from the old ones: replicas
// learn the cluster's layout (TF_CONFIG, WORLD_SIZE, ranks) when they start,
// so a job resized or re-templated under running pods would run with pods
// that disagree about it. Such a change is allowed when
//
//   - the stored job is paused: its spec.runMode.pause.enabled is true (the
//     deprecated enable was folded into it on conversion), or its
//     status.phase is Paused. A paused job has no pods, and resume rebuilds
//     every pod from the spec as it is then;
//   - the same update pauses the job: pausing deletes every pod and resume
//     rebuilds them all, so pausing and resizing in one write is the same as
//     doing it in two;
//   - no pod of the job exists yet: status.phase is empty or Pending and no
//     status.tasks[].replicaStatus[] entry has a uid.
//
// A finished job (Succeeded or Failed) refuses the change in any case: it
// never runs again. Elastic PyTorch jobs get no exception yet. An unset
// replica count is 1, so writing the 1 it stands for changes nothing.
// Indexes whose type changed are left out: that is reported on its own.
func validateTopologyUpdate(spec, old *batch.TrainingJobSpec, oldStatus *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	refusal := topologyChangeRefusal(spec, old, oldStatus)
	if refusal == "" {
		return nil
	}
	var allErrs field.ErrorList
	for i := range spec.ReplicaSpecs {
		now, was := &spec.ReplicaSpecs[i], &old.ReplicaSpecs[i]
		if now.Type != was.Type {
			continue
		}
		if batch.ReplicasOf(now) != batch.ReplicasOf(was) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("replicas"), fmt.Sprintf(
				"cannot change from %d to %d: %s", batch.ReplicasOf(was), batch.ReplicasOf(now), refusal)))
		}
		if !apiequality.Semantic.DeepEqual(now.Template, was.Template) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("template"), fmt.Sprintf(
				"cannot change: %s", refusal)))
		}
	}
	return allErrs
}

// topologyChangeRefusal is why replica counts and pod templates cannot
// change in this update, or "" when they can (see validateTopologyUpdate).
func topologyChangeRefusal(spec, old *batch.TrainingJobSpec, oldStatus *batch.TrainingJobStatus) string {
	phase := oldStatus.Phase
	switch {
	case phase.IsFinished():
		return fmt.Sprintf("the job has finished (status.phase is %s) and never runs again", phase)
	case batch.PauseEnabled(old) || phase == batch.JobPaused || batch.PauseEnabled(spec):
		return ""
	case (phase == "" || phase == batch.JobPending) && !hasPods(oldStatus):
		return ""
	}
	shown := string(phase)
	if shown == "" {
		shown = "not yet reported"
	}
	return fmt.Sprintf("the job has pods (status.phase is %s), and replica counts and pod templates may change only "+
		"while the job is paused or before any of its pods exists; pause the job first (kubectl training pause <job>, "+
		"or set spec.runMode.pause.enabled in the same update), then resume it: resume rebuilds every pod from the spec", shown)
}

// hasPods says whether the status reports a pod of the job: a replica with
// the uid of its current pod.
func hasPods(status *batch.TrainingJobStatus) bool {
	for _, task := range status.Tasks {
		for _, replica := range task.ReplicaStatus {
			if replica.UID != "" {
				return true
			}
		}
	}
	return false
}

func resumeSpecsOf(spec *batch.TrainingJobSpec) []batch.ResumeSpec {
	if spec.RunMode == nil || spec.RunMode.Pause == nil {
		return nil
	}
	return spec.RunMode.Pause.ResumeSpecs
}

func typeList(specs []batch.ReplicaSpec) string {
	types := make([]string, len(specs))
	for i, s := range specs {
		types[i] = string(s.Type)
	}
	return strings.Join(types, ", ")
}

// validateQueueUpdate keeps the queue of a job its queue has admitted: the
// label kueue.x-k8s.io/queue-name and spec.scheduler.t9kScheduler.queue
// may change only while the job is not admitted. Moving or removing the
// queue of an admitted job would run its pods outside the quota that
// admitted them; Kueue's webhooks refuse the same change for its own kinds.
// A finished job holds no quota, and its queue may change. Status writes
// are checked too: they may carry label changes.
func validateQueueUpdate(labels, oldLabels map[string]string, spec, oldSpec *batch.TrainingJobSpec, oldStatus *batch.TrainingJobStatus) field.ErrorList {
	if oldStatus.Phase.IsFinished() || !batch.QueueAdmitted(oldStatus.Conditions) {
		return nil
	}
	queue, oldQueue := batch.QueueName(labels, schedulerQueue(spec)), batch.QueueName(oldLabels, schedulerQueue(oldSpec))
	if queue == oldQueue {
		return nil
	}
	// Name the field that changed: the label when it named the queue before
	// or does now, else the scheduler block.
	path := specPath.Child("scheduler", "t9kScheduler", "queue")
	if labels[batch.QueueLabel] != oldLabels[batch.QueueLabel] {
		path = metadataPath.Child("labels").Key(batch.QueueLabel)
	}
	change := fmt.Sprintf("cannot change from %q to %q", oldQueue, queue)
	if queue == "" {
		change = fmt.Sprintf("cannot remove queue %q", oldQueue)
	}
	return field.ErrorList{field.Forbidden(path, change+": the job is admitted by its queue and may run pods under "+
		"that queue's quota; a job's queue may change only while it waits for admission (pause the job: a paused "+
		"job gives its quota back and waits again)")}
}

// schedulerQueue is spec.scheduler.t9kScheduler.queue, or "".
func schedulerQueue(spec *batch.TrainingJobSpec) string {
	if spec.Scheduler == nil || spec.Scheduler.T9kScheduler == nil {
		return ""
	}
	return spec.Scheduler.T9kScheduler.Queue
}
