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
	"testing"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestScript: a job's script is a ConfigMap the job owns, mounted
// read-only in every container with its path in TRAINING_SCRIPT; a job
// without one has neither.
func TestScript(t *testing.T) {
	job := tfJob("train", "worker", 2)
	spec := &job.Spec.ReplicaSpecs[0].Template.Spec
	spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "fetch:1"}}
	spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1"})
	plain := &Builder{Adapter: TensorFlow, Job: job.DeepCopy(), Topology: NewTopology(TensorFlow, job, "")}
	if plain.ScriptConfigMap() != nil {
		t.Errorf("a job without a script has a script ConfigMap")
	}

	job.Spec.Trainer = &v1beta1.Trainer{Script: &v1beta1.TrainerScript{Name: "train.py", Source: "print('hi')\n"}}
	b := &Builder{Adapter: TensorFlow, Job: job, Topology: NewTopology(TensorFlow, job, "")}
	cm := b.ScriptConfigMap()
	if cm == nil || cm.Name != "train-script-uid-j" || cm.Data["train.py"] != "print('hi')\n" ||
		len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != job.UID {
		t.Fatalf("script ConfigMap %+v", cm)
	}
	pod, err := b.Pod(ReplicaID{Type: "worker", Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	var volume *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].ConfigMap != nil && pod.Spec.Volumes[i].ConfigMap.Name == cm.Name {
			volume = &pod.Spec.Volumes[i]
		}
	}
	if volume == nil {
		t.Fatalf("no volume of %s in %+v", cm.Name, pod.Spec.Volumes)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == volume.Name && m.MountPath == "/var/run/tensorstack/script" && m.ReadOnly)
		}
		env := ""
		for _, e := range c.Env {
			if e.Name == "TRAINING_SCRIPT" {
				env = e.Value
			}
		}
		if !mounted || env != "/var/run/tensorstack/script/train.py" {
			t.Errorf("container %s: mounted %v, TRAINING_SCRIPT %q", c.Name, mounted, env)
		}
	}
}
