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
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// withCheckpoints gives a job the checkpoint contract and a checkpoint to
// resume from, so that its pods get every variable of the contract.
func withCheckpoints(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	spec := job.CommonSpec()
	spec.RunPolicy.Checkpoint = &v1beta1.CheckpointPolicy{VolumeName: "ckpt", IntervalSeconds: ptr.To(int32(60))}
	for i := range spec.ReplicaSpecs {
		pod := &spec.ReplicaSpecs[i].Template.Spec
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "ckpt"})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "ckpt", MountPath: "/ckpt"})
	}
	latest := &v1beta1.CheckpointRecord{}
	latest.Path, latest.Step = "/ckpt/step-10", ptr.To(int64(10))
	job.JobStatus().Checkpoint = &v1beta1.CheckpointStatus{Latest: latest}
	return job
}

// withScript gives a job a trainer script, which gives its pods
// TRAINING_SCRIPT.
func withScript(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	job.CommonSpec().Trainer = &v1beta1.Trainer{Script: &v1beta1.TrainerScript{Name: "train.py", Source: "pass"}}
	return job
}

// inPlace makes a job restart in place, which gives its pods
// TENSORSTACK_ATTEMPT.
func inPlace(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	job.CommonSpec().RunPolicy.RestartStrategy = v1beta1.RestartStrategyInPlace
	return job
}

// envNamesOf builds every pod of the job and collects the names of the
// variables their containers get, the template setting none.
func envNamesOf(t *testing.T, a Adapter, job v1beta1.TrainingJob) sets.Set[string] {
	t.Helper()
	names := sets.New[string]()
	topology := NewTopology(a, job, "")
	b := &Builder{Adapter: a, Job: job, Topology: topology}
	for _, g := range topology.Groups {
		for i := range g.Replicas {
			pod, err := b.Pod(ReplicaID{Type: g.Type, Index: i})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				for _, v := range c.Env {
					names.Insert(v.Name)
				}
			}
		}
	}
	return names
}

// TestAdaptersSetTheContractsVariables: the variables each kind's pods get
// are exactly those pkg/apis/batch lists for it (which validation refuses
// in templates) and PYTHONUNBUFFERED, a default; every listed name is set by
// some job of the kind.
func TestAdaptersSetTheContractsVariables(t *testing.T) {
	for _, tc := range []struct {
		adapter Adapter
		own     []string
		jobs    []v1beta1.TrainingJob
	}{
		{TensorFlow, batch.TensorFlowEnvNames(), []v1beta1.TrainingJob{inPlace(withScript(withCheckpoints(tfJob("j", "chief", 1, "worker", 2, "ps", 1))))}},
		{PyTorch, batch.PyTorchEnvNames(), []v1beta1.TrainingJob{
			inPlace(withScript(withCheckpoints(ptJob(nil, nil)))),
			ptJob(&v1beta1.TorchrunConfig{Enabled: true, ProcPerNode: "2"}, nil),
			ptJob(&v1beta1.TorchrunConfig{Enabled: true}, &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To(int32(1)), MaxReplicas: ptr.To(int32(4))}),
		}},
		{XGBoost, batch.XGBoostEnvNames(), []v1beta1.TrainingJob{inPlace(withScript(withCheckpoints(xgbJob())))}},
		{Generic, append(batch.GenericEnvNames(), batch.GenericHostsEnv("worker"), batch.GenericHostsEnv("coordinator"),
			batch.GenericPortEnv("coordinator")), []v1beta1.TrainingJob{inPlace(withScript(withCheckpoints(genericJob())))}},
		{MPI, batch.MPIEnvNames(), []v1beta1.TrainingJob{inPlace(withScript(withCheckpoints(mpiJob(v1beta1.MPIImplementationOpenMPI)))),
			mpiJob(v1beta1.MPIImplementationIntelMPI), mpiJob(v1beta1.MPIImplementationMPICH)}},
	} {
		listed := sets.New(batch.JobEnvNames()...).Insert(tc.own...)
		set := sets.New[string]()
		for _, job := range tc.jobs {
			set = set.Union(envNamesOf(t, tc.adapter, job))
		}
		set.Delete(batch.EnvPythonUnbuffered)
		if unlisted := sorted(set.Difference(listed)); len(unlisted) > 0 {
			t.Errorf("%s: pods get %v, which pkg/apis/batch does not list", tc.adapter.Kind(), unlisted)
		}
		if unset := sorted(listed.Difference(set)); len(unset) > 0 {
			t.Errorf("%s: pkg/apis/batch lists %v, which no pod gets", tc.adapter.Kind(), unset)
		}
	}
}

// TestTemplatesPythonUnbufferedWins: PYTHONUNBUFFERED is the controller's
// default, not its wiring: a template's own value stays.
func TestTemplatesPythonUnbufferedWins(t *testing.T) {
	job := xgbJob()
	for i := range job.Spec.ReplicaSpecs {
		c := &job.Spec.ReplicaSpecs[i].Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: batch.EnvPythonUnbuffered, Value: "0"})
	}
	b := &Builder{Adapter: XGBoost, Job: job, Topology: NewTopology(XGBoost, job, "")}
	pod, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeMaster})
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, v := range pod.Spec.Containers[0].Env {
		if v.Name == batch.EnvPythonUnbuffered {
			values = append(values, v.Value)
		}
	}
	if !slices.Equal(values, []string{"0"}) {
		t.Errorf("PYTHONUNBUFFERED %v, want the template's 0 only", values)
	}
}

func sorted(s sets.Set[string]) []string {
	out := s.UnsortedList()
	sort.Strings(out)
	return out
}
