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

package podbuilder

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Under the InPlace restart strategy a whole-job restart keeps the pods and
// has the kubelet restart their containers. Two containers of ours carry it,
// both reading the pod's annotations through a downward API volume (the
// kubelet rewrites the files when the annotations change):
//
//   - the restart agent, a regular container beside the training one. When
//     the controller asks the pod for a newer attempt, it exits with
//     ExitCodeRestartInPlace, and its container restart rule has the kubelet
//     restart every container of the pod, init containers first. It also
//     keeps the pod from ending when the training container fails, so that
//     the failure can be restarted in place; the controller stops it once
//     the pod is done with (AnnotationRestartAgent).
//   - the attempt barrier, the first init container. It lets the training
//     containers start only once the controller has released an attempt the
//     pod has not run yet: after a failure the pod waits there until every
//     replica has left the old attempt, so that no new rank meets an old one.
//     The attempts the pod ran are kept in an emptyDir, which lives as long
//     as the pod.
//
// The training containers read the attempt from TENSORSTACK_ATTEMPT, and
// the resume point from their environment and the checkpoint files; each
// container start reads the annotations anew.

// The annotations through which the controller drives an in-place restart.
const (
	// AnnotationAttempt is the attempt (status.attemptCount) the pod is
	// asked to run. A number above the one it runs restarts it in place.
	AnnotationAttempt = v1beta1.GroupName + "/attempt"
	// AnnotationAttemptAsked is when the controller last asked the pod for
	// its attempt (RFC 3339). Asking again changes the pod, which has its
	// kubelet look at it, and so at the files, once more.
	AnnotationAttemptAsked = v1beta1.GroupName + "/attempt-asked"
	// AnnotationAttemptReleased is the newest attempt whose training
	// containers may start.
	AnnotationAttemptReleased = v1beta1.GroupName + "/attempt-released"
	// AnnotationRestartAgent set to RestartAgentStop makes the agent exit
	// 0, so that a pod whose training containers ended can end too.
	AnnotationRestartAgent = v1beta1.GroupName + "/restart-agent"
	RestartAgentStop       = "Stop"
)

// The containers and volumes of an in-place restart.
const (
	RestartAgentContainerName   = "tensorstack-restart-agent"
	AttemptBarrierContainerName = "tensorstack-attempt-barrier"
	attemptVolumeName           = "tensorstack-attempt"
	attemptStateVolumeName      = "tensorstack-attempt-state"
	attemptMountPath            = "/var/run/tensorstack/attempt"
	attemptStateMountPath       = "/var/run/tensorstack/attempt-state"
)

// ExitCodeRestartInPlace is the agent's exit code that restarts every
// container of its pod (EX_TEMPFAIL).
const ExitCodeRestartInPlace int32 = 75

// InPlace says whether the job restarts its pods in place. Debug pods run
// a command of the user's choosing and are recreated as before.
func InPlace(spec *v1beta1.TrainingJobSpec) bool {
	return spec.RunPolicy.RestartStrategy == v1beta1.RestartStrategyInPlace && !DebugEnabled(spec)
}

// The scripts of the barrier and the agent. The files hold the annotations
// AnnotationAttempt, AnnotationAttemptReleased and AnnotationRestartAgent;
// "ran" holds the last attempt the pod's training containers started in. A
// pod told to stop while it waits at the barrier fails there: its job has
// ended, and it must not train.
// Both exit at once on SIGTERM: as PID 1 the shell would otherwise ignore
// it, and every stop would wait out the grace period. They read the files
// with the shell's own read, so that a look costs no process: the agent
// looks five times a second while the training runs beside it, the
// barrier ten times while it holds the pod.
func barrierScript(attemptDir, stateDir string) string {
	return fmt.Sprintf(`trap 'exit 0' TERM
d=%[1]s; ran=0
if [ -f %[2]s/ran ]; then read -r ran < %[2]s/ran; fi
said=
while :; do
  g=; a=; r=
  read -r g 2>/dev/null < $d/agent
  if [ "$g" = %[3]s ]; then echo "the job has ended"; exit 1; fi
  read -r a 2>/dev/null < $d/attempt; read -r r 2>/dev/null < $d/released
  if [ -n "$a" ] && [ -n "$r" ] && [ "$a" -gt "$ran" ] && [ "$r" -ge "$a" ]; then break; fi
  if [ -z "$said" ]; then echo "waiting for the job to release an attempt after $ran"; said=1; fi
  sleep 0.1
done
echo "$a" > %[2]s/ran
echo "starting attempt $a"
`, attemptDir, stateDir, RestartAgentStop)
}

func agentScript(attemptDir, stateDir string) string {
	return fmt.Sprintf(`trap 'exit 0' TERM
d=%[1]s; read -r ran < %[2]s/ran
while :; do
  g=; a=
  read -r g 2>/dev/null < $d/agent
  if [ "$g" = %[3]s ]; then exit 0; fi
  read -r a 2>/dev/null < $d/attempt
  if [ -n "$a" ] && [ "$a" -gt "$ran" ]; then echo "attempt $a asked: restarting the pod's containers in place"; exit %[4]d; fi
  sleep 0.2
done
`, attemptDir, stateDir, RestartAgentStop, ExitCodeRestartInPlace)
}

// agentResources are the agent's: a shell that sleeps. Requests equal
// limits, so that a Guaranteed pod stays Guaranteed.
var agentResources = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("25m"),
	corev1.ResourceMemory: resource.MustParse("32Mi"),
}

// addInPlaceRestart gives a pod the barrier, the agent, their volumes and
// annotations, and its training containers the attempt in their
// environment, read from the annotation at each start.
func addInPlaceRestart(pod *corev1.Pod, training *corev1.Container, attempt, released int32) {
	pod.Annotations[AnnotationAttempt] = strconv.Itoa(int(attempt))
	pod.Annotations[AnnotationAttemptReleased] = strconv.Itoa(int(released))
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: attemptVolumeName, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{
				annotationFile("attempt", AnnotationAttempt),
				annotationFile("released", AnnotationAttemptReleased),
				annotationFile("agent", AnnotationRestartAgent),
			},
		}}},
		corev1.Volume{Name: attemptStateVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi")),
		}}},
	)
	mounts := []corev1.VolumeMount{
		{Name: attemptVolumeName, MountPath: attemptMountPath, ReadOnly: true},
		{Name: attemptStateVolumeName, MountPath: attemptStateMountPath},
	}
	barrier := corev1.Container{
		Name:                     AttemptBarrierContainerName,
		Image:                    training.Image,
		ImagePullPolicy:          training.ImagePullPolicy,
		Command:                  []string{"sh", "-c", barrierScript(attemptMountPath, attemptStateMountPath)},
		Resources:                computeResources(training.Resources),
		SecurityContext:          training.SecurityContext.DeepCopy(),
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod.Spec.InitContainers = append([]corev1.Container{barrier}, pod.Spec.InitContainers...)
	agent := corev1.Container{
		Name:            RestartAgentContainerName,
		Image:           training.Image,
		ImagePullPolicy: training.ImagePullPolicy,
		Command:         []string{"sh", "-c", agentScript(attemptMountPath, attemptStateMountPath)},
		SecurityContext: training.SecurityContext.DeepCopy(),
		VolumeMounts:    mounts,
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyNever),
		RestartPolicyRules: []corev1.ContainerRestartRule{{
			Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{ExitCodeRestartInPlace},
			},
		}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if hasResources(pod) {
		agent.Resources = corev1.ResourceRequirements{Requests: agentResources.DeepCopy(), Limits: agentResources.DeepCopy()}
	}
	pod.Spec.Containers = append(pod.Spec.Containers, agent)
	if pod.Annotations[defaultContainerAnnotation] == "" {
		// kubectl logs and exec go to the training container, not the
		// agent that now follows it.
		pod.Annotations[defaultContainerAnnotation] = training.Name
	}
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name != RestartAgentContainerName {
			setEnv(c, []corev1.EnvVar{annotationEnv(v1beta1.EnvAttempt, AnnotationAttempt)})
		}
	}
}

// defaultContainerAnnotation names the container kubectl picks.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// hasResources says whether any container of the pod asks for resources; a
// BestEffort pod stays BestEffort.
func hasResources(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		r := pod.Spec.Containers[i].Resources
		if len(r.Requests) > 0 || len(r.Limits) > 0 {
			return true
		}
	}
	return false
}

// IsRestartAgent says whether a container is the in-place restart agent,
// which the outcome of a replica leaves aside.
func IsRestartAgent(name string) bool { return name == RestartAgentContainerName }

// PodAttempt is the attempt a pod is asked to run (AnnotationAttempt), and
// whether the pod restarts in place at all.
func PodAttempt(pod *corev1.Pod) (int32, bool) {
	return annotationInt(pod, AnnotationAttempt)
}

// PodAttemptReleased is the newest attempt a pod may start
// (AnnotationAttemptReleased).
func PodAttemptReleased(pod *corev1.Pod) (int32, bool) {
	return annotationInt(pod, AnnotationAttemptReleased)
}

func annotationInt(pod *corev1.Pod, key string) (int32, bool) {
	v, ok := pod.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// CanRestartInPlace says whether a pod, as the cluster stored it, carries
// the agent's restart rule: an API server without the ContainerRestartRules
// feature drops the rules, and such a pod can only be recreated.
func CanRestartInPlace(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == RestartAgentContainerName {
			for _, r := range c.RestartPolicyRules {
				if r.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// ParkedAtBarrier says whether a pod waits at its attempt barrier: none of
// its training containers runs, and none will until the controller
// releases its attempt.
func ParkedAtBarrier(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == AttemptBarrierContainerName {
			return cs.State.Running != nil
		}
	}
	return false
}
