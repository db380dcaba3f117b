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

package batch

// Limits every job keeps. Validation refuses a job beyond them with 422, and
// the controller refuses to act on a stored job beyond them (one written
// before a limit existed), so that neither the job's status nor the
// controller's work grows with a number a spec merely claims. The field
// comments in v1beta1/types.go, which kubectl explain shows, state the same
// numbers; a test in v1beta1 keeps them in step.
const (
	// MaxTotalReplicas is the most replicas a job may have, summed over its
	// replica specs. status.tasks lists every replica (pod name, UID, phase
	// and each container's state and last termination), and etcd refuses a
	// write over 1.5 MiB: at the longest names (a 63-character job name,
	// 127-character pod names, four containers with 63-character names), with
	// every container's end recorded as v1beta1.CompactTerminations keeps it,
	// one replica's entry takes about 960 bytes, so the status of 1000
	// replicas is about 1008 KiB (under a budget of 1040 KiB), and a job of a
	// few large pod templates with it about 1063 KiB, under 1.125 MiB.
	// TestStoredJobAtReplicaCapFitsBudget in v1beta1 checks this.
	MaxTotalReplicas = 1000

	// MaxReplicaTypes is the most replica specs a job may list. Each type has
	// an entry in status.tasks, and a pod template in the spec, whether or
	// not it has replicas; real jobs use a handful.
	MaxReplicaTypes = 32

	// MaxReplicaRules is the most success rules, and the most failure
	// rules, a generic job may list.
	MaxReplicaRules = 32

	// MaxActiveDeadlineSeconds is the longest activeDeadlineSeconds: ten
	// years of 365 days. No training run lasts that long; a larger number
	// only ever means "no deadline", which leaving the field out says. The
	// bound also keeps the deadline far from overflowing time arithmetic
	// (a time.Duration holds about 292 years).
	MaxActiveDeadlineSeconds = 10 * 365 * 24 * 60 * 60

	// MaxStartTimeoutSeconds is the longest startTimeoutSeconds, ten years
	// as MaxActiveDeadlineSeconds and for the same reasons.
	MaxStartTimeoutSeconds = MaxActiveDeadlineSeconds

	// MaxTTLSecondsAfterFinished is the longest ttlSecondsAfterFinished: ten
	// years, as MaxActiveDeadlineSeconds. A finished job meant to be kept is
	// one without the field.
	MaxTTLSecondsAfterFinished = MaxActiveDeadlineSeconds

	// MaxBackoffLimit is the largest backoffLimit. A million restarts is
	// beyond what any job uses: at the replacement backoff's ceiling of six
	// minutes one replica needs over eleven years to spend them. Larger
	// numbers only stand for "unlimited", which no job should ask for.
	MaxBackoffLimit = 1_000_000

	// MaxTorchrunRestarts is the largest torchrunConfig.maxRestarts, bounded
	// like backoffLimit and for the same reason.
	MaxTorchrunRestarts = MaxBackoffLimit

	// MaxCommandBytes bounds a command or argument list the job hands to
	// every pod of a type: a debug command, a resume command or its args,
	// and torchrun's extraOptions. Each entry counts its length plus one, as
	// the kernel counts an argument vector. Such a list is copied into every
	// pod of the type (up to MaxTotalReplicas of them); 32 KiB is ample for a
	// command line and a quarter of the 128 KiB Linux allows one argument.
	MaxCommandBytes = 32 * 1024

	// MaxScriptBytes is the largest spec.trainer.script.source. The script
	// is stored in the job and copied once into a ConfigMap; 256 KiB leaves
	// a job at MaxTotalReplicas room under etcd's 1.5 MiB request limit,
	// and is ample for a program that is not a library.
	MaxScriptBytes = 256 * 1024

	// MaxTrainerEnv is the most variables spec.trainer.env may list: each
	// is copied into the training container of every replica type.
	MaxTrainerEnv = 256

	// MaxPodTemplateBytes bounds a replica spec's pod template, encoded as
	// JSON. Every pod of the type copies it, up to MaxTotalReplicas of them,
	// and what the controller adds to it does not grow with the job (the
	// replicas' addresses are in a ConfigMap the pods refer to); 128 KiB is
	// many times a real template, and keeps each pod far under the 1.5 MiB
	// the cluster's etcd stores.
	MaxPodTemplateBytes = 128 * 1024

	// MaxFailurePolicyRules is the most rules runPolicy.failurePolicy may
	// hold. The controller tries them in order for every failed pod; real
	// policies need a handful. Kubernetes caps a Job's podFailurePolicy
	// rules at the same number.
	MaxFailurePolicyRules = 20

	// MaxFailurePolicyExitCodes is the most values a rule's onExitCodes may
	// list: every exit code a process can report, 1 to 255 (0 is a success).
	MaxFailurePolicyExitCodes = 255

	// MaxFailurePolicyPodConditions is the most entries a rule's
	// onPodConditions may list, as in a Kubernetes podFailurePolicy rule.
	MaxFailurePolicyPodConditions = 20

	// MaxFailurePolicyReasons is the most entries a rule's onReasons may
	// list; termination reasons are a short, known set.
	MaxFailurePolicyReasons = 20

	// MaxFailurePolicyReasonLength is the longest entry of onReasons:
	// termination and eviction reasons are CamelCase words such as
	// OOMKilled, ContainerCannotRun or Evicted.
	MaxFailurePolicyReasonLength = 128

	// MaxReplicaStatusReasonLength is the longest reason of a replica's
	// status entry: the controller writes short CamelCase words (BackOff),
	// and a job at the replica cap carries a thousand of them.
	MaxReplicaStatusReasonLength = 32

	// MaxContainerReasonLength is the longest reason of a container's state
	// in a replica's status: the kubelet's CamelCase words, such as
	// CreateContainerConfigError or OOMKilled.
	MaxContainerReasonLength = 128

	// MaxTerminationMessageBytes is the longest termination message a
	// replica's status keeps of a container: its end. At the replica cap a
	// thousand of them take a quarter of a stored job's limit.
	MaxTerminationMessageBytes = 256
)

// TotalReplicas is the number of replicas the specs ask for, an unset count
// taken as the default of 1 and a negative one as none. The sum is an int64
// so that counts near the int32 limit cannot overflow it.
func TotalReplicas(specs []ReplicaSpec) int64 {
	var total int64
	for i := range specs {
		total += max(int64(ReplicasOf(&specs[i])), 0)
	}
	return total
}

// CommandBytes is the size of an argument list as MaxCommandBytes counts it:
// each entry's length plus one.
func CommandBytes(args []string) int {
	n := 0
	for _, a := range args {
		n += len(a) + 1
	}
	return n
}
