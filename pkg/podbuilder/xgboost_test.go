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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestXGBoostEnv: every replica gets the tracker on the master (rank 0,
// though listed after the workers), the number of replicas and its own
// rank, in Kubeflow's names and in XGBoost's collective's; the master alone
// decides the job.
// xgbJob is an XGBoost job of two workers and a master, listed in that
// order.
func xgbJob() *v1beta1.XGBoostTrainingJob {
	job := &v1beta1.XGBoostTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
	for _, r := range []struct {
		typ      v1beta1.ReplicaType
		replicas int32
	}{{v1beta1.ReplicaTypeWorker, 2}, {v1beta1.ReplicaTypeMaster, 1}} {
		job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type: r.typ, Replicas: ptr.To(r.replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: v1beta1.XGBoostContainerName, Image: "trainer:1", Command: []string{"python3", "train.py"},
			}}}},
		})
	}
	return job
}

func TestXGBoostEnv(t *testing.T) {
	job := xgbJob()
	b := &Builder{Adapter: XGBoost, Job: job, Topology: NewTopology(XGBoost, job, "cluster.local")}
	const master = "master-0.j.ns.svc.cluster.local"
	workers := "worker-0.j.ns.svc.cluster.local,worker-1.j.ns.svc.cluster.local"
	for hostname, rank := range map[string]string{"master-0": "0", "worker-0": "1", "worker-1": "2"} {
		pod, err := b.Pod(replicaOf(t, hostname))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"MASTER_ADDR": master, "MASTER_PORT": "9999", "WORLD_SIZE": "3", "RANK": rank,
			"WORKER_ADDRS": workers, "WORKER_PORT": "9999",
			"DMLC_TRACKER_URI": master, "DMLC_TRACKER_PORT": "9999", "DMLC_NUM_WORKER": "3", "DMLC_TASK_ID": rank,
		}
		got := map[string]string{}
		for name, value := range containerEnv(t, b, &pod.Spec.Containers[0]) {
			if _, ok := want[name]; ok {
				got[name] = value
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: environment differs (-want +got):\n%s", hostname, diff)
		}
	}

	workersDone := succeededReplicas{{Type: v1beta1.ReplicaTypeWorker}: true, {Type: v1beta1.ReplicaTypeWorker, Index: 1}: true}
	if XGBoost.Succeeded(b.Topology, workersDone) {
		t.Error("the job succeeded with its workers, before its master")
	}
	if !XGBoost.Succeeded(b.Topology, succeededReplicas{{Type: v1beta1.ReplicaTypeMaster}: true}) {
		t.Error("the master succeeded, the job did not")
	}
	if leaders := XGBoost.Leaders(b.Topology); len(leaders) != 1 || leaders[0].Type != v1beta1.ReplicaTypeMaster {
		t.Errorf("leaders %v, want the master", leaders)
	}
}

// succeededReplicas are the replicas that succeeded.
type succeededReplicas map[ReplicaID]bool

func (s succeededReplicas) Succeeded(r ReplicaID) bool { return s[r] }
func (s succeededReplicas) AllSucceeded() bool         { return false }
