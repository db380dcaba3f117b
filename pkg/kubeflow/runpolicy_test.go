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

import "testing"

func TestRunPolicy(t *testing.T) {
	tf := func(overlay string) string { return manifest(t, tfJobManifest, overlay) }
	pt := func(overlay string) string { return manifest(t, pyTorchJobManifest, overlay) }
	runFieldCases(t, []fieldCase{
		{
			name:  "no cleanPodPolicy: Kubeflow's default None, where ours would default to Unfinished",
			input: tfJobManifest,
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: None}`,
		},
		{
			name:  "no cleanPodPolicy in a PyTorchJob",
			input: pyTorchJobManifest,
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: None}`,
		},
		{
			name:  "cleanPodPolicy All",
			input: tf(`spec: {runPolicy: {cleanPodPolicy: All}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: All}`,
		},
		{
			name:  "cleanPodPolicy Running is Unfinished",
			input: pt(`spec: {runPolicy: {cleanPodPolicy: Running}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: Unfinished}`,
		},
		{
			name:  "cleanPodPolicy None",
			input: tf(`spec: {runPolicy: {cleanPodPolicy: None}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: None}`,
		},
		{
			name:  "limits",
			input: pt(`spec: {runPolicy: {ttlSecondsAfterFinished: 600, activeDeadlineSeconds: 86400, backoffLimit: 5}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: None, ttlSecondsAfterFinished: 600, activeDeadlineSeconds: 86400, backoffLimit: 5}`,
		},
		{
			name:  "a backoffLimit of 0 is kept, not defaulted",
			input: tf(`spec: {runPolicy: {backoffLimit: 0}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: None, backoffLimit: 0}`,
		},
		{
			name:  "the older top-level settings",
			input: tf(`spec: {cleanPodPolicy: All, ttlSecondsAfterFinished: 60, activeDeadlineSeconds: 3600, backoffLimit: 2}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: All, ttlSecondsAfterFinished: 60, activeDeadlineSeconds: 3600, backoffLimit: 2}`,
		},
		{
			name:  "both places, agreeing",
			input: pt(`spec: {backoffLimit: 2, runPolicy: {backoffLimit: 2}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: None, backoffLimit: 2}`,
		},
		{
			name:  "both places, disagreeing: runPolicy wins",
			input: tf(`spec: {cleanPodPolicy: All, backoffLimit: 2, runPolicy: {cleanPodPolicy: Running, backoffLimit: 5}}`),
			path:  "spec.runPolicy",
			want:  `{cleanUpPolicy: Unfinished, backoffLimit: 5}`,
			warnings: []string{
				"spec.cleanPodPolicy: dropped: it disagrees with spec.runPolicy.cleanPodPolicy (Running), which is used",
				"spec.backoffLimit: dropped: it disagrees with spec.runPolicy.backoffLimit (5), which is used",
			},
		},
		{
			name:  "schedulingPolicy.queue",
			input: pt(`spec: {runPolicy: {schedulingPolicy: {queue: research}}}`),
			path:  "spec.scheduler",
			want:  `{t9kScheduler: {queue: research}}`,
		},
		{
			name:  "no queue, no scheduler",
			input: tf(`spec: {runPolicy: {schedulingPolicy: {queue: ""}}}`),
			path:  "spec.scheduler",
			want:  `null`,
		},
		{
			name: "what the scheduling policy has beyond the queue",
			input: tf(`spec: {runPolicy: {schedulingPolicy: {queue: research, minAvailable: 2, priorityClass: high,
				minResources: {cpu: "8"}, scheduleTimeoutSeconds: 300}}}`),
			path: "spec.scheduler",
			want: `{t9kScheduler: {queue: research}}`,
			warnings: []string{
				"spec.runPolicy.schedulingPolicy.minAvailable: not carried over: a job with spec.scheduler is gang-scheduled as a whole: all of its replicas or none",
				"spec.runPolicy.schedulingPolicy.priorityClass: not carried over: queued jobs are ordered by spec.scheduler.t9kScheduler.priority (0 to 100), which a PriorityClass does not map to",
				"spec.runPolicy.schedulingPolicy.minResources: not carried over: ours has no minimum resources for scheduling a job",
				"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: not carried over: ours has no scheduling timeout",
			},
		},
		{
			name:  "suspend",
			input: pt(`spec: {runPolicy: {suspend: true}}`),
			path:  "spec.runMode",
			want:  `{pause: {enabled: true}}`,
		},
		{
			name:  "suspend false",
			input: tf(`spec: {runPolicy: {suspend: false}}`),
			path:  "spec.runMode",
			want:  `null`,
		},
		{
			name:     "managedBy",
			input:    tf(`spec: {runPolicy: {managedBy: kueue.x-k8s.io/multikueue}}`),
			path:     "spec.runPolicy",
			want:     `{cleanUpPolicy: None}`,
			warnings: []string{"spec.runPolicy.managedBy: not carried over: a TensorStack job is always run by the TensorStack controller"},
		},
	})
}

func TestRunPolicyErrors(t *testing.T) {
	tf := func(overlay string) string { return manifest(t, tfJobManifest, overlay) }
	runErrorCases(t, []errorCase{
		{
			name:  "an unknown cleanPodPolicy",
			input: tf(`spec: {runPolicy: {cleanPodPolicy: Finished}}`),
			err:   `document 0: spec.runPolicy.cleanPodPolicy: unsupported value "Finished"; Kubeflow accepts "All", "Running" or "None"`,
		},
		{
			name:  "an unknown top-level cleanPodPolicy",
			input: tf(`spec: {cleanPodPolicy: running}`),
			err:   `document 0: spec.cleanPodPolicy: unsupported value "running"; Kubeflow accepts "All", "Running" or "None"`,
		},
		{
			name:  "a backoffLimit that is not a number",
			input: tf(`spec: {runPolicy: {backoffLimit: three}}`),
			err:   `document 0: spec.runPolicy.backoffLimit: must be a whole number, not the string "three"`,
		},
		{
			name:  "a ttl out of range",
			input: tf(`spec: {ttlSecondsAfterFinished: 4294967296}`),
			err:   `document 0: spec.ttlSecondsAfterFinished: 4294967296 is out of range [-2147483648, 2147483647]`,
		},
		{
			name:  "a deadline with a fraction",
			input: tf(`spec: {runPolicy: {activeDeadlineSeconds: 1.5}}`),
			err:   `document 0: spec.runPolicy.activeDeadlineSeconds: must be a whole number, not 1.5`,
		},
		{
			name:  "suspend not a boolean",
			input: tf(`spec: {runPolicy: {suspend: "yes"}}`),
			err:   `document 0: spec.runPolicy.suspend: must be true or false, not the string "yes"`,
		},
		{
			name:  "schedulingPolicy not an object",
			input: tf(`spec: {runPolicy: {schedulingPolicy: research}}`),
			err:   `document 0: spec.runPolicy.schedulingPolicy: must be an object, not the string "research"`,
		},
	})
}
