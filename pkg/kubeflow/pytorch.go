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
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// pyTorchReplicas: the master comes first, so that it has rank 0 as in
// Kubeflow, where workers are ranked after it.
var pyTorchReplicas = replicaKind{
	kind:       pyTorchJobKind,
	specsField: "pytorchReplicaSpecs",
	types: []replicaTypeMapping{
		{kubeflow: "Master", ours: v1beta1.ReplicaTypeMaster},
		{kubeflow: "Worker", ours: v1beta1.ReplicaTypeWorker},
	},
	defaultRestartPolicy: v1beta1.RestartPolicyOnFailure,
}

// kubeflowDefaultNprocPerNode is what Kubeflow hands torchrun when a job
// gives no number of processes per node.
const kubeflowDefaultNprocPerNode = "auto"

// convertPyTorchJob converts a PyTorchJob's spec into a PyTorchTrainingJob.
func convertPyTorchJob(meta metav1.ObjectMeta, spec *object, w *warnings) (*v1beta1.PyTorchTrainingJob, error) {
	job := &v1beta1.PyTorchTrainingJob{TypeMeta: typeMeta("PyTorchTrainingJob"), ObjectMeta: meta}
	paths, err := pyTorchReplicas.convertSharedSpec(spec, &job.Spec.TrainingJobSpec, w)
	if err != nil {
		return nil, err
	}
	replicas := job.Spec.ReplicaSpecs

	launchOptions, starts := startTorchrun(replicas, paths, w)
	torchrun := torchrunTarget{w: w}
	if starts {
		job.Spec.TorchrunConfig = &v1beta1.TorchrunConfig{Enabled: true}
		torchrun.config = job.Spec.TorchrunConfig
	}
	elastic, err := convertElasticPolicy(spec, job.Name, replicas, torchrun, w)
	if err != nil {
		return nil, err
	}
	job.Spec.Elastic = elastic.config
	if err := convertProcPerNode(spec, elastic.procPerNode, replicas, torchrun, w); err != nil {
		return nil, err
	}
	if starts {
		// After the options from elasticPolicy: on the command line, they won
		// over Kubeflow's PET_* variables.
		job.Spec.TorchrunConfig.ExtraOptions = append(job.Spec.TorchrunConfig.ExtraOptions, launchOptions...)
	}
	spec.reportLeftovers(w)
	return job, nil
}

// torchrunTarget receives the settings of a Kubeflow job that only torchrun
// reads: into spec.torchrunConfig when our controller starts torchrun, else
// as warnings.
type torchrunTarget struct {
	config *v1beta1.TorchrunConfig // nil when torchrun is not enabled
	w      *warnings
}

// set applies a setting found at path, or reports it.
func (t torchrunTarget) set(path *field.Path, apply func(*v1beta1.TorchrunConfig)) {
	if t.config == nil {
		t.w.notCarriedOver(path, "only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled")
		return
	}
	apply(t.config)
}

// addOption appends a torchrun option to the job's extra options.
func (t torchrunTarget) addOption(path *field.Path, option string) {
	t.set(path, func(tc *v1beta1.TorchrunConfig) { tc.ExtraOptions = append(tc.ExtraOptions, option) })
}

// procPerNodeSetting is a number of processes per replica given to torchrun,
// and where the input gives it.
type procPerNodeSetting struct {
	value string
	path  *field.Path
}

// convertProcPerNode sets torchrun's processes per replica from
// spec.nprocPerNode or, as Kubeflow lets it win, the deprecated
// elasticPolicy.nProcPerNode. Kubeflow hands torchrun auto when neither is
// given.
func convertProcPerNode(spec *object, fromElastic *procPerNodeSetting, replicas []v1beta1.ReplicaSpec, torchrun torchrunTarget, w *warnings) error {
	value, present, err := spec.takeString("nprocPerNode")
	if err != nil {
		return err
	}
	setting := procPerNodeSetting{value, spec.path.Child("nprocPerNode")}
	if fromElastic != nil {
		if present && value != fromElastic.value {
			w.add(setting.path, "dropped: %s (%s) overrides it, as in Kubeflow", fromElastic.path, fromElastic.value)
		}
		setting, present = *fromElastic, true
	}
	if !present {
		if torchrun.config == nil {
			return nil // the default reaches only torchrun
		}
		setting.value = kubeflowDefaultNprocPerNode
	}
	torchrun.set(setting.path, func(tc *v1beta1.TorchrunConfig) {
		if procPerNode, ok := procPerNodeOf(setting.value, replicas); ok {
			tc.ProcPerNode = procPerNode
			return
		}
		const ours = "; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1"
		switch {
		case !present:
			w.add(setting.path, "absent, so Kubeflow hands torchrun auto, which starts one process per CPU where there is no GPU"+ours)
		case setting.value == kubeflowDefaultNprocPerNode:
			w.notCarriedOver(setting.path, "auto starts one process per CPU where there is no GPU"+ours)
		case setting.value == "cpu":
			w.notCarriedOver(setting.path, "cpu starts one process per CPU"+ours)
		default:
			w.notCarriedOver(setting.path, fmt.Sprintf("%q is not a number of processes torchrun accepts (auto, cpu, gpu or a positive number)", setting.value)+ours)
		}
	})
	return nil
}

// procPerNodeOf translates torchrun's nproc_per_node into our procPerNode,
// which is a number or gpu. auto is one process per GPU where there are GPUs:
// it maps to gpu when every replica's training container asks for GPUs.
func procPerNodeOf(value string, replicas []v1beta1.ReplicaSpec) (string, bool) {
	switch {
	case value == "gpu":
		return value, true
	case value == kubeflowDefaultNprocPerNode:
		for i := range replicas {
			if !requestsGPU(&replicas[i].Template.Spec) {
				return "", false
			}
		}
		return "gpu", true
	}
	n, err := strconv.Atoi(value)
	return value, err == nil && n > 0 && strconv.Itoa(n) == value
}

// requestsGPU reports whether a pod's training container asks for a GPU, of
// any vendor (nvidia.com/gpu, amd.com/gpu).
func requestsGPU(pod *corev1.PodSpec) bool {
	c := v1beta1.TrainingContainer(pod.Containers, v1beta1.PyTorchContainerName)
	if c < 0 {
		return false
	}
	resources := pod.Containers[c].Resources
	for _, list := range []corev1.ResourceList{resources.Limits, resources.Requests} {
		for name, quantity := range list {
			if strings.HasSuffix(string(name), "/gpu") && !quantity.IsZero() {
				return true
			}
		}
	}
	return false
}
