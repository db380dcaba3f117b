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

package kubeflow

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// cleanUpPolicies maps Kubeflow's cleanPodPolicy to our cleanUpPolicy. Running
// becomes Unfinished: Kubeflow deletes the pods still running, ours the pods
// that have not terminated, which adds pods still pending; nothing is closer.
var cleanUpPolicies = map[string]v1beta1.CleanUpPolicy{
	"All":     v1beta1.CleanUpPolicyAll,
	"Running": v1beta1.CleanUpPolicyUnfinished,
	"None":    v1beta1.CleanUpPolicyNone,
}

// kubeflowDefaultCleanPodPolicy is what Kubeflow applies when a job gives no
// cleanPodPolicy; ours would default to Unfinished.
const kubeflowDefaultCleanPodPolicy = "None"

// convertRunPolicy converts spec.runPolicy, reading its limits and clean pod
// policy also from the top level of spec, where older manifests put them.
func convertRunPolicy(spec *object, out *v1beta1.TrainingJobSpec, w *warnings) error {
	runPolicy, err := spec.takeObject("runPolicy")
	if err != nil {
		return err
	}
	policy := &out.RunPolicy

	cleanPod, path, present, err := takeRunPolicySetting(runPolicy, spec, "cleanPodPolicy", (*object).takeString, w)
	if err != nil {
		return err
	}
	if !present {
		cleanPod = kubeflowDefaultCleanPodPolicy
	}
	cleanUp, found := cleanUpPolicies[cleanPod]
	if !found {
		return fmt.Errorf("%s: unsupported value %q; Kubeflow accepts \"All\", \"Running\" or \"None\"", path, cleanPod)
	}
	policy.CleanUpPolicy = cleanUp

	ttl, _, present, err := takeRunPolicySetting(runPolicy, spec, "ttlSecondsAfterFinished", (*object).takeInt32, w)
	if err != nil {
		return err
	}
	if present {
		policy.TTLSecondsAfterFinished = &ttl
	}
	deadline, _, present, err := takeRunPolicySetting(runPolicy, spec, "activeDeadlineSeconds", (*object).takeInt64, w)
	if err != nil {
		return err
	}
	if present {
		policy.ActiveDeadlineSeconds = &deadline
	}
	backoff, _, present, err := takeRunPolicySetting(runPolicy, spec, "backoffLimit", (*object).takeInt32, w)
	if err != nil {
		return err
	}
	if present {
		policy.BackoffLimit = &backoff
	}

	if err := convertSchedulingPolicy(runPolicy, out, w); err != nil {
		return err
	}
	suspend, _, err := runPolicy.takeBool("suspend")
	if err != nil {
		return err
	}
	if suspend {
		out.RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
	}
	if _, path, present := runPolicy.take("managedBy"); present {
		w.notCarriedOver(path, "a TensorStack job is always run by the TensorStack controller")
	}
	runPolicy.reportLeftovers(w)
	return nil
}

// takeRunPolicySetting takes a setting from spec.runPolicy and from the top
// level of spec. Kubeflow v1 reads runPolicy, so runPolicy wins where both
// are given and disagree. It returns the path of the value it chose.
func takeRunPolicySetting[T comparable](runPolicy, spec *object, key string, take func(*object, string) (T, bool, error), w *warnings) (T, *field.Path, bool, error) {
	value, present, err := take(runPolicy, key)
	if err != nil {
		return value, nil, false, err
	}
	legacy, legacyPresent, err := take(spec, key)
	if err != nil {
		return value, nil, false, err
	}
	switch {
	case present:
		if legacyPresent && legacy != value {
			w.add(spec.path.Child(key), "dropped: it disagrees with %s (%v), which is used", runPolicy.path.Child(key), value)
		}
		return value, runPolicy.path.Child(key), true, nil
	case legacyPresent:
		return legacy, spec.path.Child(key), true, nil
	}
	return value, nil, false, nil
}

// unsupportedSchedulingFields are the parts of Kubeflow's scheduling policy
// ours has no place for, with the reason.
var unsupportedSchedulingFields = []struct{ key, why string }{
	{"minAvailable", "a job with spec.scheduler is gang-scheduled as a whole: all of its replicas or none"},
	{"priorityClass", "queued jobs are ordered by spec.scheduler.t9kScheduler.priority (0 to 100), which a PriorityClass does not map to"},
	{"minResources", "ours has no minimum resources for scheduling a job"},
	{"scheduleTimeoutSeconds", "ours has no scheduling timeout"},
}

// convertSchedulingPolicy puts the job into the T9k scheduler's queue of the
// same name.
func convertSchedulingPolicy(runPolicy *object, out *v1beta1.TrainingJobSpec, w *warnings) error {
	scheduling, err := runPolicy.takeObject("schedulingPolicy")
	if err != nil {
		return err
	}
	queue, _, err := scheduling.takeString("queue")
	if err != nil {
		return err
	}
	if queue != "" {
		out.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: queue}}
	}
	for _, f := range unsupportedSchedulingFields {
		if _, path, present := scheduling.take(f.key); present {
			w.notCarriedOver(path, f.why)
		}
	}
	scheduling.reportLeftovers(w)
	return nil
}
