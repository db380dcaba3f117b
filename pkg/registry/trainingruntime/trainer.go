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

package trainingruntime

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

var trainerPath = field.NewPath("spec", "trainer")

// applyTrainer writes the job's spec.trainer into its replica specs, which
// hold the runtime's and the job's own by then. The trainer applies to the
// training container of each replica type (kind.TrainingContainer, or the
// first container):
//
//   - image: every type's;
//   - command and args: the container's args on every type that runs the
//     trainer's command (kind.RunsTrainerCommand): command and args when
//     command is given, otherwise the runtime's args followed by args. The
//     container's command stays the runtime's launcher;
//   - env: every type's, over the variables of the same names;
//   - numNodes: the replica counts of the node types (kind.IsNode), the
//     last of which takes what the others leave;
//   - resourcesPerNode: every node type's, resource by resource.
//
// The script is the controller's to mount; nothing here changes for it.
func applyTrainer(spec *batch.TrainingJobSpec, t *batch.Trainer, kind batch.KindInfo) field.ErrorList {
	if t == nil {
		return nil
	}
	if errs := applyNumNodes(spec.ReplicaSpecs, t.NumNodes, kind); len(errs) > 0 {
		return errs
	}
	for i := range spec.ReplicaSpecs {
		r := &spec.ReplicaSpecs[i]
		containers := r.Template.Spec.Containers
		ci := batch.TrainingContainer(containers, kind.TrainingContainer)
		if ci < 0 {
			continue
		}
		c := &containers[ci]
		if t.Image != "" {
			c.Image = t.Image
		}
		if kind.RunsTrainerCommand(r.Type) {
			switch {
			case len(t.Command) > 0:
				c.Args = slices.Concat(t.Command, t.Args)
			case len(t.Args) > 0:
				c.Args = slices.Concat(c.Args, t.Args)
			}
		}
		c.Env = mergeEnv(c.Env, t.Env)
		if t.ResourcesPerNode != nil && kind.IsNode(r.Type) {
			c.Resources.Requests = mergeResources(c.Resources.Requests, t.ResourcesPerNode.Requests)
			c.Resources.Limits = mergeResources(c.Resources.Limits, t.ResourcesPerNode.Limits)
		}
	}
	return nil
}

// applyNumNodes sets the node types' replica counts so that they sum to
// numNodes: every node type but the last keeps its count.
func applyNumNodes(specs []batch.ReplicaSpec, numNodes *int32, kind batch.KindInfo) field.ErrorList {
	if numNodes == nil {
		return nil
	}
	path := trainerPath.Child("numNodes")
	var nodes []int
	for i := range specs {
		if kind.IsNode(specs[i].Type) {
			nodes = append(nodes, i)
		}
	}
	if len(nodes) == 0 {
		return field.ErrorList{field.Invalid(path, *numNodes,
			"the job has no replica type whose replicas are nodes: give spec.replicaSpecs, or name a runtime that has one")}
	}
	last := nodes[len(nodes)-1]
	var others int32
	var names []string
	for _, i := range nodes[:len(nodes)-1] {
		others += batch.ReplicasOf(&specs[i])
		names = append(names, string(specs[i].Type))
	}
	if *numNodes <= others {
		return field.ErrorList{field.Invalid(path, *numNodes, fmt.Sprintf(
			"must be more than %d: the replica types %s have %d nodes, and %s needs at least one",
			others, strings.Join(names, ", "), others, specs[last].Type))}
	}
	specs[last].Replicas = ptr.To(*numNodes - others)
	return nil
}

// mergeEnv sets each of the trainer's variables over the container's of
// the same name, in place, and adds the others after them.
func mergeEnv(env, trainer []corev1.EnvVar) []corev1.EnvVar {
	if len(trainer) == 0 {
		return env
	}
	out := slices.Clone(env)
	for _, v := range trainer {
		if i := slices.IndexFunc(out, func(e corev1.EnvVar) bool { return e.Name == v.Name }); i >= 0 {
			out[i] = *v.DeepCopy()
		} else {
			out = append(out, *v.DeepCopy())
		}
	}
	return out
}

// mergeResources sets each of the trainer's quantities over the
// container's.
func mergeResources(list, trainer corev1.ResourceList) corev1.ResourceList {
	if len(trainer) == 0 {
		return list
	}
	out := make(corev1.ResourceList, len(list)+len(trainer))
	for name, q := range list {
		out[name] = q.DeepCopy()
	}
	for name, q := range trainer {
		out[name] = q.DeepCopy()
	}
	return out
}
