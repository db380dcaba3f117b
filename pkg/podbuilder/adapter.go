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
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Adapters are the adapters of every kind, in the order of batch.Kinds.
var Adapters = []Adapter{TensorFlow, PyTorch, XGBoost, Generic, MPI}

// AdapterOf returns the adapter of a kind, by its API kind name.
func AdapterOf(kind string) (Adapter, bool) {
	for _, a := range Adapters {
		if a.Kind() == kind {
			return a, true
		}
	}
	return nil, false
}

// Adapter answers the few questions on which the job kinds differ. Everything
// else (pods, Service, restarts, status, pause, debug, TensorBoard) is the
// shared machinery's business.
type Adapter interface {
	// Kind is the job kind; it is also the value of the job-kind label.
	Kind() string
	// Resource is the kind's resource name in the API.
	Resource() string
	// TrainingContainerName names the container that runs the training
	// program; the first container is used when none has this name.
	TrainingContainerName() string
	// PortNames are the container port names that carry a replica's port, in
	// order of preference; DefaultPort is used when none is declared.
	PortNames() []string
	DefaultPort() int32
	// RankOrder returns the replica types in the order ranks and indices
	// across the job are handed out.
	RankOrder(specs []v1beta1.ReplicaSpec) []v1beta1.ReplicaSpec
	// Env returns what gives each replica its environment. It is called
	// once per reconcile, and computes what every replica shares (TF_CONFIG's
	// cluster lists every replica) then, so that building a job's pods costs
	// in proportion to their number, not to its square.
	Env(t *Topology) (ReplicaEnv, error)
	// Entrypoint may rewrite how the training container of a replica is
	// started (torchrun). It is not called for debug pods.
	Entrypoint(t *Topology, r ReplicaID, c *corev1.Container)
	// Succeeded applies the kind's success rule to the replicas' phases.
	Succeeded(t *Topology, phases ReplicaPhases) bool
	// Decider is the replica whose outcome the kind's success rule looks
	// at first, and so the one whose log tells how the job went (kubectl
	// training logs shows it when no replica is named); false for a job
	// without replicas.
	Decider(t *Topology) (ReplicaID, bool)
	// Leaders are the replicas the others wait for under the InOrder
	// startup policy.
	Leaders(t *Topology) []ReplicaID
	// GangMember says whether the replicas of a type belong to the job's
	// gang, the replicas that must run at the same time for training to
	// make progress, and are thus placed all or nothing.
	GangMember(t v1beta1.ReplicaType) bool
}

// PodDecorator is an adapter whose kind adds to a replica's pod more than
// its training container's environment and start: volumes, mounts, init
// containers (an MPI job's SSH keys and hostfile). training is the index of
// the training container.
type PodDecorator interface {
	DecoratePod(t *Topology, r ReplicaID, pod *corev1.Pod, training int)
}

// FailureJudge is an adapter whose kind lets replicas fail for good without
// failing the job (a GenericJob's failure rules). Without it, any replica
// that fails for good fails the job.
type FailureJudge interface {
	// FailsJob says whether the replicas that have failed for good, as
	// failed says, fail the job.
	FailsJob(t *Topology, failed func(ReplicaID) bool) bool
}

// ReplicaEnv returns the environment of one replica.
type ReplicaEnv func(r ReplicaID) ([]corev1.EnvVar, error)

// ReplicaID names one replica: its type and its index within the type.
type ReplicaID struct {
	Type  v1beta1.ReplicaType
	Index int32
}

// Hostname is the replica's hostname, <type>-<index>.
func (r ReplicaID) Hostname() string {
	return batch.Hostname(string(r.Type), r.Index)
}

// ReplicaPhases tells the success rules what each replica did.
type ReplicaPhases interface {
	// Succeeded says whether the replica's current pod has succeeded.
	Succeeded(r ReplicaID) bool
	// AllSucceeded says whether every replica of the job has succeeded.
	AllSucceeded() bool
}

// PodName is the name of a replica's pod, <job>-<type>-<index>.
func PodName(job string, r ReplicaID) string {
	return v1beta1.PodName(job, r.Type, r.Index)
}

// TrainingContainer returns the index of the training container in a pod
// spec, or -1 when there are no containers.
func TrainingContainer(a Adapter, spec *corev1.PodSpec) int {
	return v1beta1.TrainingContainer(spec.Containers, a.TrainingContainerName())
}

// replicaPort is the port a replica type listens on: the training
// container's port with one of the adapter's names, else the default.
func replicaPort(a Adapter, spec *v1beta1.ReplicaSpec) int32 {
	i := TrainingContainer(a, &spec.Template.Spec)
	if i < 0 {
		return a.DefaultPort()
	}
	ports := spec.Template.Spec.Containers[i].Ports
	for _, name := range a.PortNames() {
		for _, p := range ports {
			if p.Name == name && p.ContainerPort > 0 {
				return p.ContainerPort
			}
		}
	}
	return a.DefaultPort()
}

// setEnv puts the variables into a container after its own, replacing
// entries of the same name: the controller's wiring has to be right for the
// replicas to find each other (validation refuses templates that set those
// names, so this replaces only in jobs stored before that rule). A replaced
// entry moves to the end with the others, in their order: a value that
// refers to another ($(TENSORSTACK_TF_CLUSTER) in TF_CONFIG) is expanded by
// the kubelet only when the other comes first. PYTHONUNBUFFERED is a
// default, which a template's own value overrides.
func setEnv(c *corev1.Container, vars []corev1.EnvVar) {
	for _, v := range vars {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == v.Name })
		switch {
		case i < 0:
			c.Env = append(c.Env, v)
		case v.Name == batch.EnvPythonUnbuffered:
			// The template's own value stays.
		default:
			c.Env = append(slices.Delete(c.Env, i, i+1), v)
		}
	}
}

func envVar(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func itoa(i int32) string { return strconv.FormatInt(int64(i), 10) }

func hostPort(host string, port int32) string { return fmt.Sprintf("%s:%d", host, port) }
