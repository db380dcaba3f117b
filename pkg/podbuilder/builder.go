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
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Builder builds the pods and the Service of one job. Its fields are the
// inputs; set them before the first build. Pod may be called from several
// goroutines at once.
type Builder struct {
	Adapter  Adapter
	Job      v1beta1.TrainingJob
	Topology *Topology
	// Gang is the group the job's pods join; nil when they join none.
	Gang Gang
	// Placements are what a queue's admission asks of each replica type's
	// pods; nil for a job that is not queued.
	Placements map[v1beta1.ReplicaType]*Placement
	// Resumed: the job has been paused before, so replica types with a
	// resumeSpec start as it says.
	Resumed bool
	// GatesOpen: under the InOrder startup policy, the leaders are ready,
	// so waiting replicas are created with their gate open.
	GatesOpen bool
	// AvoidNodes are nodes the pods must not be placed on: the job's
	// suspect nodes.
	AvoidNodes []string
	// Attempt is the job's attempt the pods are made for, and
	// AttemptReleased the newest one they may start: below Attempt while
	// an in-place restart waits for every replica to leave the old one.
	// Only pods that restart in place carry them.
	Attempt, AttemptReleased int32
	// RecreateOnRestart builds the pods of a job that asks for in-place
	// restarts without the parts that carry them, as under Recreate: no
	// node the pods may run on can restart their containers in place.
	RecreateOnRestart bool

	envOnce sync.Once
	env     ReplicaEnv
}

// Gang is how a pod joins its job's gang; each gang scheduler has its own
// way (a pod group label, a scheduling group, a scheduler name).
type Gang interface {
	// Join makes a pod part of the group. A pod that is not a member (a
	// TensorFlow evaluator) is only given what keeps the job with one
	// scheduler.
	Join(pod *corev1.Pod, member bool)
}

// labels are the labels of everything built for the job.
func (b *Builder) labels() map[string]string {
	return v1beta1.JobLabels(b.Adapter.Kind(), b.Job.GetName())
}

// replicaLabels are the labels of a replica's pod.
func (b *Builder) replicaLabels(id ReplicaID) map[string]string {
	l := b.labels()
	l[v1beta1.LabelReplicaType] = string(id.Type)
	l[v1beta1.LabelReplicaIndex] = itoa(id.Index)
	return l
}

// controllerRef makes the job the controller of what is built for it.
func (b *Builder) controllerRef() metav1.OwnerReference {
	return v1beta1.JobControllerRef(b.Job, b.Adapter.Kind())
}

// Env is the environment of the job's replicas. It is computed once, on
// first use, and kept, a failure too, so that building many pods does not
// compute what they share again for each.
func (b *Builder) Env() ReplicaEnv {
	b.envOnce.Do(func() {
		env, err := b.Adapter.Env(b.Topology)
		if err != nil {
			env = func(ReplicaID) ([]corev1.EnvVar, error) { return nil, err }
		}
		b.env = env
	})
	return b.env
}

// Pod builds the pod of a replica from its type's template.
func (b *Builder) Pod(id ReplicaID) (*corev1.Pod, error) {
	group := b.Topology.Group(id.Type)
	if group == nil {
		return nil, fmt.Errorf("the job has no replica type %s", id.Type)
	}
	spec := b.Job.CommonSpec()
	tmpl := group.Spec.Template.DeepCopy()
	ci := TrainingContainer(b.Adapter, &tmpl.Spec)
	if ci < 0 {
		return nil, fmt.Errorf("replica type %s has no containers", id.Type)
	}
	debug := DebugEnabled(spec)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(b.Job.GetName(), id),
			Namespace:       b.Job.GetNamespace(),
			Labels:          tmpl.Labels,
			Annotations:     tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{b.controllerRef()},
		},
		Spec: tmpl.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range b.replicaLabels(id) {
		pod.Labels[k] = v
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationRunMode] = RunMode(debug)
	pod.Annotations[AnnotationTopology] = b.Topology.Shape()
	pod.Finalizers = append(pod.Finalizers, v1beta1.ReplicaOutcomeFinalizer)
	pod.Spec.Hostname = id.Hostname()
	pod.Spec.Subdomain = b.Job.GetName()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	b.schedule(pod, id)

	c := &pod.Spec.Containers[ci]
	if debug {
		startForDebug(pod, c, spec, id.Type)
	} else {
		b.startForTraining(pod, c, spec, id)
	}

	env, err := b.Env()(id)
	if err != nil {
		return nil, err
	}
	for i := range pod.Spec.InitContainers {
		setEnv(&pod.Spec.InitContainers[i], env)
	}
	job := b.jobEnv()
	for i := range pod.Spec.Containers {
		setEnv(&pod.Spec.Containers[i], env)
		setEnv(&pod.Spec.Containers[i], job)
	}
	b.addCheckpointContract(pod, ci)
	b.addScript(pod)
	if d, ok := b.Adapter.(PodDecorator); ok {
		d.DecoratePod(b.Topology, id, pod, ci)
	}
	if b.restartsInPlace() {
		addInPlaceRestart(pod, &pod.Spec.Containers[ci], b.Attempt, b.AttemptReleased)
	}
	return pod, nil
}

// restartsInPlace says whether the pods carry the in-place restart parts.
func (b *Builder) restartsInPlace() bool {
	return InPlace(b.Job.CommonSpec()) && !b.RecreateOnRestart
}

// jobEnv names the job to the code in its containers.
func (b *Builder) jobEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		envVar(v1beta1.EnvJobName, b.Job.GetName()),
		envVar(v1beta1.EnvJobNamespace, b.Job.GetNamespace()),
		envVar(v1beta1.EnvJobResource, b.Adapter.Resource()),
	}
}

// startForDebug runs the debug command in place of the training program.
func startForDebug(pod *corev1.Pod, c *corev1.Container, spec *v1beta1.TrainingJobSpec, typ v1beta1.ReplicaType) {
	command, skipInit := debugSpec(spec, typ)
	c.Command, c.Args = command, nil
	if skipInit {
		pod.Spec.InitContainers = nil
	}
}

// startForTraining applies a resumed job's resumeSpec, the kind's
// entrypoint and, for a replica that waits for the leaders, the startup
// gate.
func (b *Builder) startForTraining(pod *corev1.Pod, c *corev1.Container, spec *v1beta1.TrainingJobSpec, id ReplicaID) {
	if rs := resumeSpec(spec, id.Type); rs != nil && b.Resumed {
		// Each of command and args replaces the template's only when the
		// resumeSpec gives it.
		if len(rs.Command) > 0 {
			c.Command = append([]string(nil), rs.Command...)
		}
		if len(rs.Args) > 0 {
			c.Args = append([]string(nil), rs.Args...)
		}
		if rs.SkipInitContainer {
			pod.Spec.InitContainers = nil
		}
	}
	b.Adapter.Entrypoint(b.Topology, id, c)
	if InOrder(spec) && !IsLeader(b.Adapter, b.Topology, id) {
		addStartupGate(pod, c, b.GatesOpen)
	}
	// Before the gate: a replica on a bad node should not wait for the
	// leaders only to fail its check then.
	if check := spec.RunPolicy.Preflight; check != nil {
		addPreflight(pod, c, check)
	}
}

// schedule puts the job's scheduling request on a pod: the priority's
// class, the gang and the queue's placement.
func (b *Builder) schedule(pod *corev1.Pod, id ReplicaID) {
	if t9k := T9kScheduler(b.Job.CommonSpec()); t9k != nil {
		// Pods of a gang share one priority; the job's, when it has one,
		// wins over a template's. The admission plugin derives the
		// numbers.
		if class := PriorityClassName(t9k.Priority); class != "" {
			pod.Spec.PriorityClassName = class
			pod.Spec.Priority = nil
			pod.Spec.PreemptionPolicy = nil
		}
		if b.Gang != nil {
			b.Gang.Join(pod, b.Adapter.GangMember(id.Type))
		}
	}
	if p := b.Placements[id.Type]; p != nil {
		p.place(pod)
	}
	avoidNodes(pod, b.AvoidNodes)
}
