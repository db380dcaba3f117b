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

package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The pod template settings of this file are for jobs that run real
// containers (the real-node tests): the simulated nodes ignore them. A
// setter without a replica type changes every replica; one named Replica...
// changes one type, after the settings of every replica, so it wins.

// TrainingImage is the image the real nodes (internal/localcluster) are given
// without a registry: Python, PyTorch and, in its working directory, the
// scripts the real-node tests run.
const TrainingImage = "localhost/tensorstack/training:v1"

// templateEdit changes a replica's pod template when the job is built.
type templateEdit func(*corev1.PodTemplateSpec)

// everyReplica records an edit of every replica's pod template.
func (b *JobBuilder) everyReplica(edit templateEdit) *JobBuilder {
	b.edits = append(b.edits, edit)
	return b
}

// replica records an edit of one replica type's pod template; the type must
// have been added.
func (b *JobBuilder) replica(typ string, edit templateEdit) *JobBuilder {
	b.spec(typ)
	o := b.opts(typ)
	o.edits = append(o.edits, edit)
	return b
}

// trainingContainer is the container WithReplicas put in the template.
func trainingContainer(t *corev1.PodTemplateSpec) *corev1.Container {
	return &t.Spec.Containers[0]
}

// UnscheduledPods gives every replica's pod a scheduler no one runs, so
// that the job's pods are made and stay Pending with no node: for a test of
// what the controller makes, which should not load the scheduler and the
// simulated nodes the other tests share.
func (b *JobBuilder) UnscheduledPods() *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) { t.Spec.SchedulerName = "e2e-no-scheduler" })
}

// Image sets the image of every replica's training container.
func (b *JobBuilder) Image(image string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) { trainingContainer(t).Image = image })
}

// ImagePullPolicy sets when the node pulls the training container's image.
func (b *JobBuilder) ImagePullPolicy(p corev1.PullPolicy) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) { trainingContainer(t).ImagePullPolicy = p })
}

// Command sets what every replica's training container runs. It drops the
// arguments WithReplicas gives the simulated nodes: the command is the
// whole invocation.
func (b *JobBuilder) Command(command ...string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) { setCommand(trainingContainer(t), command) })
}

// ReplicaCommand is Command for one replica type.
func (b *JobBuilder) ReplicaCommand(typ string, command ...string) *JobBuilder {
	return b.replica(typ, func(t *corev1.PodTemplateSpec) { setCommand(trainingContainer(t), command) })
}

func setCommand(c *corev1.Container, command []string) {
	c.Command, c.Args = append([]string(nil), command...), nil
}

// Env adds an environment variable to every replica's training container.
func (b *JobBuilder) Env(name, value string) *JobBuilder {
	return b.addEnv(corev1.EnvVar{Name: name, Value: value})
}

// EnvFromSecret adds an environment variable whose value is the key of a
// Secret.
func (b *JobBuilder) EnvFromSecret(name, secret, key string) *JobBuilder {
	return b.addEnv(corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}})
}

func (b *JobBuilder) addEnv(v corev1.EnvVar) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		c := trainingContainer(t)
		c.Env = append(c.Env, v)
	})
}

// Requests sets the CPU and memory every replica's training container
// requests (quantities such as "250m" and "512Mi").
func (b *JobBuilder) Requests(cpu, memory string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		r := &trainingContainer(t).Resources
		r.Requests = withQuantity(r.Requests, corev1.ResourceCPU, cpu)
		r.Requests = withQuantity(r.Requests, corev1.ResourceMemory, memory)
	})
}

// CPULimit caps every replica's training container's CPU.
func (b *JobBuilder) CPULimit(cpu string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		r := &trainingContainer(t).Resources
		r.Limits = withQuantity(r.Limits, corev1.ResourceCPU, cpu)
	})
}

// MemoryLimit caps every replica's training container's memory; the kernel
// kills a container over it (OOMKilled).
func (b *JobBuilder) MemoryLimit(memory string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		r := &trainingContainer(t).Resources
		r.Limits = withQuantity(r.Limits, corev1.ResourceMemory, memory)
	})
}

// withQuantity sets name to quantity in list, making the list when it has
// none; a quantity that does not parse panics, as a typo in a test should.
func withQuantity(list corev1.ResourceList, name corev1.ResourceName, quantity string) corev1.ResourceList {
	if list == nil {
		list = corev1.ResourceList{}
	}
	list[name] = resource.MustParse(quantity)
	return list
}

// TerminationMessagePolicy sets where the kubelet takes the message of an
// ended training container from; FallbackToLogsOnError takes a failed
// one's last log lines.
func (b *JobBuilder) TerminationMessagePolicy(p corev1.TerminationMessagePolicy) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) { trainingContainer(t).TerminationMessagePolicy = p })
}

// ReplicaReadinessProbe sets the readiness probe of one replica type's
// training container.
func (b *JobBuilder) ReplicaReadinessProbe(typ string, probe corev1.Probe) *JobBuilder {
	return b.replica(typ, func(t *corev1.PodTemplateSpec) { trainingContainer(t).ReadinessProbe = probe.DeepCopy() })
}

// GracePeriod sets how long every replica's pods have between SIGTERM and
// SIGKILL (terminationGracePeriodSeconds).
func (b *JobBuilder) GracePeriod(seconds int64) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) { t.Spec.TerminationGracePeriodSeconds = &seconds })
}

// ReplicaGracePeriod is GracePeriod for one replica type.
func (b *JobBuilder) ReplicaGracePeriod(typ string, seconds int64) *JobBuilder {
	return b.replica(typ, func(t *corev1.PodTemplateSpec) { t.Spec.TerminationGracePeriodSeconds = &seconds })
}

// ClaimVolume mounts the PersistentVolumeClaim claim, as the pod volume
// name, at mountPath in every replica's training container.
func (b *JobBuilder) ClaimVolume(name, claim, mountPath string) *JobBuilder {
	return b.volume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}, mountPath)
}

// ConfigMapVolume mounts the ConfigMap configMap's keys, as files of the pod
// volume name, at mountPath in every replica's training container.
func (b *JobBuilder) ConfigMapVolume(name, configMap, mountPath string) *JobBuilder {
	return b.volume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}, mountPath)
}

// SecretVolume mounts the Secret secret's keys, as files of the pod volume
// name, at mountPath in every replica's training container.
func (b *JobBuilder) SecretVolume(name, secret, mountPath string) *JobBuilder {
	return b.volume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret}}}, mountPath)
}

func (b *JobBuilder) volume(v corev1.Volume, mountPath string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		t.Spec.Volumes = append(t.Spec.Volumes, *v.DeepCopy())
		c := trainingContainer(t)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: mountPath})
	})
}

// Tolerate adds a toleration to every replica's pods.
func (b *JobBuilder) Tolerate(toleration corev1.Toleration) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		t.Spec.Tolerations = append(t.Spec.Tolerations, *toleration.DeepCopy())
	})
}

// PreferNode asks the scheduler to put every replica's pods on the node
// named node when it can (a preferred node affinity of weight 100); they
// still go elsewhere when it cannot.
func (b *JobBuilder) PreferNode(node string) *JobBuilder {
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		t.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}},
			}},
		}}
	})
}

// SpreadOverNodes keeps the job's pods spread over the nodes: the scheduler
// places no pod on a node that would then hold two more of them than
// another node does (maxSkew 1, DoNotSchedule).
func (b *JobBuilder) SpreadOverNodes() *JobBuilder {
	job := b.name
	return b.everyReplica(func(t *corev1.PodTemplateSpec) {
		t.Spec.TopologySpreadConstraints = append(t.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       corev1.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{v1beta1.LabelJobName: job}},
		})
	})
}
