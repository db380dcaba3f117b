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

package v1beta1_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/openapi"
)

// The budget of a job at the replica cap. etcd refuses a write over 1.5 MiB
// (its default --max-request-bytes); a job at the cap stays within 1.125 MiB,
// a quarter below. Of that, the status takes at most statusBudget, whatever
// the replica types, with every container's last termination recorded as
// CompactTerminations keeps it; the rest is for the metadata and a spec of a
// few large pod templates. A spec larger still is its author's own doing (the
// apiserver bounds a request's body, and the controller reports a status
// write that fails for size).
const (
	storedObjectBudget = 1152 << 10
	statusBudget       = 1040 << 10
	// largeJobTypes is how many replica types with large templates the
	// whole-job check carries (say master, worker, ps and a data loader).
	largeJobTypes = 4
)

// Worst-case lengths: names at the limits Kubernetes and validation allow.
const (
	longestJobName       = 63 // a DNS-1035 label
	longestHostname      = 63 // <type>-<index>, a DNS-1123 label
	longestContainerName = 63 // a DNS-1123 label
	containersPerReplica = 4  // the training container and three sidecars
	conditionMessageLen  = 512
)

// TestStoredJobAtReplicaCapFitsBudget builds the largest status a job at
// batch.MaxTotalReplicas can have once every replica has run, and a whole job
// of large templates with it, and checks that they encode (as the apiserver
// stores them, in JSON) within their budgets. Raising the cap without room
// for it fails here.
func TestStoredJobAtReplicaCapFitsBudget(t *testing.T) {
	t.Run("status with every replica type", func(t *testing.T) {
		job := worstCaseJob(t, batch.MaxReplicaTypes)
		status := encodedSize(t, job.Status)
		entry := encodedSize(t, job.Status.Tasks[0].ReplicaStatus[batch.MaxTotalReplicas/2])
		t.Logf("%d replicas of %d types: one replica's entry %d bytes, status %d bytes (budget %d)",
			batch.MaxTotalReplicas, batch.MaxReplicaTypes, entry, status, statusBudget)
		if status > statusBudget {
			t.Errorf("the status of a job at the replica cap encodes to %d bytes, over the budget of %d: lower batch.MaxTotalReplicas or find room",
				status, statusBudget)
		}
	})
	t.Run("job of large templates", func(t *testing.T) {
		job := worstCaseJob(t, largeJobTypes)
		whole, spec := encodedSize(t, job), encodedSize(t, job.Spec)
		t.Logf("%d replicas of %d types: spec %d bytes, whole job %d bytes (budget %d)",
			batch.MaxTotalReplicas, largeJobTypes, spec, whole, storedObjectBudget)
		if whole > storedObjectBudget {
			t.Errorf("a job at the replica cap encodes to %d bytes, over the budget of %d: lower batch.MaxTotalReplicas or find room",
				whole, storedObjectBudget)
		}
	})
}

func encodedSize(t *testing.T, v any) int {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// worstCaseJob is a PyTorch job (the kind that allows any replica types) at
// the replica cap, with the given number of replica types: every name as long as allowed, every replica reported with
// its pod's UID and every container terminated, and a spec whose templates
// are what a real, large job carries, also repeated in kubectl's
// last-applied-configuration annotation and in managedFields.
func worstCaseJob(t *testing.T, replicaTypes int) *v1beta1.PyTorchTrainingJob {
	jobName := strings.Repeat("j", longestJobName)
	indexDigits := len(strconv.Itoa(batch.MaxTotalReplicas - 1))
	typeLen := longestHostname - 1 - indexDigits
	now := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))

	job := &v1beta1.PyTorchTrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "PyTorchTrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName, Namespace: strings.Repeat("n", 63), UID: uid(0), ResourceVersion: "123456789",
			Generation: 42, CreationTimestamp: now,
			Labels: map[string]string{"app.kubernetes.io/name": strings.Repeat("l", 63), "team": "research"},
		},
	}
	jobSpec := &job.Spec
	// One type holds most replicas, so that most pod names have the longest
	// index; the other types have one replica each.
	for i := range replicaTypes {
		replicas := int32(1)
		if i == 0 {
			replicas = int32(batch.MaxTotalReplicas - (replicaTypes - 1))
		}
		typ := v1beta1.ReplicaType(fmt.Sprintf("%s%02d", strings.Repeat("t", typeLen-2), i))
		jobSpec.ReplicaSpecs = append(jobSpec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type: typ, Replicas: ptr.To(replicas), Template: largeTemplate(), RestartPolicy: v1beta1.RestartPolicyOnFailure,
		})
	}
	jobSpec.RunPolicy = v1beta1.RunPolicy{
		ActiveDeadlineSeconds: ptr.To[int64](batch.MaxActiveDeadlineSeconds), BackoffLimit: ptr.To[int32](batch.MaxBackoffLimit),
		CleanUpPolicy: v1beta1.CleanUpPolicyUnfinished, TTLSecondsAfterFinished: ptr.To[int32](batch.MaxTTLSecondsAfterFinished),
	}
	jobSpec.RunMode = &v1beta1.RunMode{
		Debug: &v1beta1.DebugMode{ReplicaSpecs: []v1beta1.ReplicaDebugSpec{{Type: jobSpec.ReplicaSpecs[0].Type, Command: []string{"sleep", "inf"}}}},
		Pause: &v1beta1.PauseMode{ResumeSpecs: []v1beta1.ResumeSpec{{Type: jobSpec.ReplicaSpecs[0].Type, Args: []string{"--resume-from=/ckpt/latest"}}}},
	}
	jobSpec.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: strings.Repeat("q", 63), Priority: 100}}
	jobSpec.TensorboardSpec = &v1beta1.TensorBoardSpec{Image: strings.Repeat("i", 128), TrainingLogFilesets: []string{"t9k://pvc/" + strings.Repeat("p", 63) + "/logs"}}
	jobSpec.TorchrunConfig = &v1beta1.TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](3), ProcPerNode: "gpu", ExtraOptions: []string{"--rdzv-conf=timeout=900"}}

	specJSON, err := json.Marshal(jobSpec)
	if err != nil {
		t.Fatal(err)
	}
	job.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(specJSON)}
	job.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "batch.tensorstack.dev/v1beta1",
			Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(specJSON))},
		{Manager: "training-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.tensorstack.dev/v1beta1",
			Time: &now, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)},
	}

	st := &job.Status
	st.ObservedGeneration, st.Phase, st.BackoffCount = 42, v1beta1.JobFailed, batch.MaxBackoffLimit
	st.StartTime, st.CompletionTime = &now, &now
	for _, typ := range []string{"Initialized", "Running", "ReplicaFailure", "Paused", "Completed", "Failed"} {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: 42,
			LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: strings.Repeat("m", conditionMessageLen)})
	}
	st.Tensorboard = &v1beta1.DependentStatus{Name: "tensorboard", Ready: true, Reason: "Ready", Action: "Create", Type: "Normal",
		Note: strings.Repeat("m", conditionMessageLen),
		Dependent: &corev1.ObjectReference{Kind: "Deployment", Namespace: job.Namespace, Name: jobName[:51] + "-tensorboard",
			UID: uid(1), APIVersion: "apps/v1", ResourceVersion: "123456789"}}
	n := 0
	for _, r := range jobSpec.ReplicaSpecs {
		task := v1beta1.TaskStatus{Type: r.Type, RestartCount: batch.MaxBackoffLimit}
		for i := range *r.Replicas {
			n++
			rs := v1beta1.ReplicaStatus{
				Name: jobName + "-" + string(r.Type) + "-" + strconv.Itoa(int(i)), UID: uid(n), Phase: v1beta1.ReplicaDeleted,
				Reason: strings.Repeat("r", batch.MaxReplicaStatusReasonLength), RestartAt: &now, RestartCount: math.MaxInt32,
			}
			for c := range containersPerReplica {
				// Every container ended with the longest reason and message
				// a status may hold, and is waiting again with a reason.
				rs.Containers = append(rs.Containers, v1beta1.ContainerStatus{
					Name:  fmt.Sprintf("%s%d", strings.Repeat("c", longestContainerName-1), c),
					State: "Waiting", ExitCode: -2147483648, Reason: strings.Repeat("r", batch.MaxContainerReasonLength),
					LastTermination: &v1beta1.ContainerTermination{
						ExitCode: -2147483648, Signal: math.MaxInt32, Reason: strings.Repeat("r", batch.MaxContainerReasonLength),
						Message: strings.Repeat("m", batch.MaxTerminationMessageBytes), FinishedAt: &now,
					},
				})
			}
			task.ReplicaStatus = append(task.ReplicaStatus, rs)
		}
		st.Tasks = append(st.Tasks, task)
	}
	// As the controller keeps it.
	v1beta1.CompactTerminations(st.Tasks)
	st.Aggregate = v1beta1.Aggregate{Succeeded: int32(n)}
	return job
}

// uid is a distinct UID in the 36-character form the apiserver gives.
func uid(n int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n))
}

// largeTemplate is the pod template of a large real job: a training
// container with its command, environment, resources and mounts, and sidecars.
func largeTemplate() corev1.PodTemplateSpec {
	training := corev1.Container{
		Name:    "pytorch",
		Image:   "registry.example.com/research/large-model-training:2026.03.01-cuda12.4-" + strings.Repeat("a", 40),
		Command: []string{"python", "-u", "/workspace/train.py"},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("64"), "memory": resource.MustParse("512Gi"), "nvidia.com/gpu": resource.MustParse("8")},
			Limits:   corev1.ResourceList{"cpu": resource.MustParse("96"), "memory": resource.MustParse("900Gi"), "nvidia.com/gpu": resource.MustParse("8")},
		},
		Ports: []corev1.ContainerPort{{Name: "pytorch", ContainerPort: 23456}},
	}
	for i := range 12 {
		training.Args = append(training.Args, fmt.Sprintf("--option-%02d=%s", i, strings.Repeat("v", 30)))
	}
	for i := range 20 {
		training.Env = append(training.Env, corev1.EnvVar{Name: fmt.Sprintf("TRAINING_SETTING_%02d", i), Value: strings.Repeat("e", 60)})
	}
	var volumes []corev1.Volume
	for i := range 4 {
		name := fmt.Sprintf("data-%d", i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: strings.Repeat("p", 60) + name[len(name)-1:]},
		}})
		training.VolumeMounts = append(training.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/mnt/" + name})
	}
	sidecar := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.example.com/platform/" + name + ":1.0", Args: []string{"--interval=30s"}}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "train", "team": "research", "project": strings.Repeat("p", 40)},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
		},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{training, sidecar("metrics-exporter"), sidecar("log-shipper"), sidecar("checkpoint-sync")},
			Volumes:      volumes,
			NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "gpu-8x-h100"},
			Tolerations: []corev1.Toleration{
				{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			},
		},
	}
}

// TestExplainStatesLimits keeps what kubectl explain shows (the OpenAPI
// descriptions generated from the field comments in types.go) in step with
// the limits validation enforces.
func TestExplainStatesLimits(t *testing.T) {
	definitions := openapi.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.Ref{} })
	cases := []struct {
		model, field string
		limits       []int
	}{
		{v1beta1.TrainingJobSpec{}.OpenAPIModelName(), "replicaSpecs", []int{batch.MaxReplicaTypes, batch.MaxTotalReplicas}},
		{v1beta1.ReplicaSpec{}.OpenAPIModelName(), "replicas", []int{batch.MaxTotalReplicas}},
		{v1beta1.RunPolicy{}.OpenAPIModelName(), "activeDeadlineSeconds", []int{batch.MaxActiveDeadlineSeconds}},
		{v1beta1.RunPolicy{}.OpenAPIModelName(), "backoffLimit", []int{batch.MaxBackoffLimit}},
		{v1beta1.RunPolicy{}.OpenAPIModelName(), "startTimeoutSeconds", []int{batch.MaxStartTimeoutSeconds}},
		{v1beta1.RunPolicy{}.OpenAPIModelName(), "ttlSecondsAfterFinished", []int{batch.MaxTTLSecondsAfterFinished}},
		{v1beta1.ReplicaDebugSpec{}.OpenAPIModelName(), "command", []int{batch.MaxCommandBytes}},
		{v1beta1.ResumeSpec{}.OpenAPIModelName(), "command", []int{batch.MaxCommandBytes}},
		{v1beta1.ResumeSpec{}.OpenAPIModelName(), "args", []int{batch.MaxCommandBytes}},
		{v1beta1.TorchrunConfig{}.OpenAPIModelName(), "maxRestarts", []int{batch.MaxTorchrunRestarts}},
		{v1beta1.TorchrunConfig{}.OpenAPIModelName(), "extraOptions", []int{batch.MaxCommandBytes}},
		{v1beta1.ElasticConfig{}.OpenAPIModelName(), "minReplicas", []int{batch.MaxTotalReplicas}},
		{v1beta1.ElasticConfig{}.OpenAPIModelName(), "maxReplicas", []int{batch.MaxTotalReplicas}},
		{v1beta1.ElasticConfig{}.OpenAPIModelName(), "expectedReplicas", []int{batch.MaxTotalReplicas}},
		{v1beta1.FailurePolicy{}.OpenAPIModelName(), "rules", []int{batch.MaxFailurePolicyRules}},
		{v1beta1.FailurePolicyOnExitCodes{}.OpenAPIModelName(), "values", []int{batch.MaxFailurePolicyExitCodes}},
		{v1beta1.FailurePolicyRule{}.OpenAPIModelName(), "onPodConditions", []int{batch.MaxFailurePolicyPodConditions}},
		{v1beta1.FailurePolicyRule{}.OpenAPIModelName(), "onReasons", []int{batch.MaxFailurePolicyReasons, batch.MaxFailurePolicyReasonLength}},
	}
	for _, tc := range cases {
		definition, ok := definitions[tc.model]
		if !ok {
			t.Errorf("no OpenAPI definition %s", tc.model)
			continue
		}
		description := definition.Schema.Properties[tc.field].Description
		for _, limit := range tc.limits {
			if !strings.Contains(description, " "+strconv.Itoa(limit)) {
				t.Errorf("%s.%s: the description %q does not state the limit %d", tc.model, tc.field, description, limit)
			}
		}
	}
}

// TestExplainPromisesNothingPending: what kubectl explain shows describes what
// the server does, not a plan. The elastic field said for a release after
// elastic scaling worked that scaling "is not yet done".
func TestExplainPromisesNothingPending(t *testing.T) {
	definitions := openapi.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.Ref{} })
	for model, definition := range definitions {
		if !strings.HasPrefix(model, "dev.tensorstack.") {
			continue // Kubernetes' own
		}
		for field, property := range definition.Schema.Properties {
			for _, pending := range []string{"not yet done", "not yet implemented", "not implemented yet", "TODO"} {
				if strings.Contains(property.Description, pending) {
					t.Errorf("%s.%s: the description says %q: %q", model, field, pending, property.Description)
				}
			}
		}
	}
	elastic := definitions[v1beta1.PyTorchTrainingJobSpec{}.OpenAPIModelName()].Schema.Properties["elastic"].Description
	for _, s := range []string{"minReplicas", "maxReplicas", "expectedReplicas", "scale subresource"} {
		if !strings.Contains(elastic, s) {
			t.Errorf("pj.spec.elastic: the description %q does not mention %s", elastic, s)
		}
	}
}

// attemptsBudget is what status.attempts may add to a stored job at most.
const attemptsBudget = 112 << 10

// TestAttemptHistoryFitsBudget fills status.attempts to every bound (each
// attempt with the most failed replicas, the longest names, messages and
// reasons, and log tails in the newest attempts) and checks its encoded
// size, which batch.MaxAttempts and its kin promise.
func TestAttemptHistoryFitsBudget(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	checkpoint := &v1beta1.AttemptCheckpoint{Path: "/ckpt/" + strings.Repeat("c", 250), Step: ptr.To[int64](math.MaxInt64)}
	var st v1beta1.TrainingJobStatus
	for i := range batch.MaxAttempts {
		a := v1beta1.Attempt{
			Number: int32(i + 1), StartTime: at, EndTime: &at,
			Reason: strings.Repeat("r", batch.MaxContainerReasonLength), Message: strings.Repeat("m", batch.MaxAttemptMessageBytes),
			ResumedFrom: checkpoint, LastCheckpoint: checkpoint, Steps: ptr.To[int64](math.MaxInt64),
			FailedReplicaCount: math.MaxInt32,
		}
		if i < batch.MaxAttempts-batch.MaxAttemptsWithFailedReplicas {
			st.Attempts = append(st.Attempts, a)
			continue
		}
		for range batch.MaxAttemptFailedReplicas {
			f := v1beta1.FailedReplica{
				Name: strings.Repeat("p", 127), UID: types.UID(strings.Repeat("u", 36)), Node: strings.Repeat("n", 253),
				ExitCode: ptr.To[int32](255), Reason: strings.Repeat("r", batch.MaxContainerReasonLength), Time: at,
			}
			// Log lines are escaped in JSON: a quote takes two bytes.
			f.Logs = strings.Repeat(`"`, batch.MaxAttemptLogBytes)
			f.LogError = strings.Repeat("e", batch.MaxAttemptLogErrorBytes)
			a.FailedReplicas = append(a.FailedReplicas, f)
		}
		st.Attempts = append(st.Attempts, a)
	}
	size := encodedSize(t, st)
	t.Logf("status.attempts at every bound: %d bytes (budget %d)", size, attemptsBudget)
	if size > attemptsBudget {
		t.Errorf("status.attempts at its bounds encodes to %d bytes, over its budget of %d", size, attemptsBudget)
	}
}
