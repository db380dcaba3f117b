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

// ptJob is a PyTorchTrainingJob of two workers listed before a master, so
// that the master's rank 0 comes from the rank order, not the list order.
// Every container runs `python3 -u train.py --epochs 3`.
func ptJob(tc *v1beta1.TorchrunConfig, elastic *v1beta1.ElasticConfig) *v1beta1.PyTorchTrainingJob {
	job := &v1beta1.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
	for _, r := range []struct {
		typ      v1beta1.ReplicaType
		replicas int32
	}{{v1beta1.ReplicaTypeWorker, 2}, {v1beta1.ReplicaTypeMaster, 1}} {
		job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type: r.typ, Replicas: ptr.To(r.replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: v1beta1.PyTorchContainerName, Image: "trainer:1",
				Command: []string{"python3", "-u", "train.py"}, Args: []string{"--epochs", "3"},
			}}}},
		})
	}
	job.Spec.TorchrunConfig = tc
	job.Spec.Elastic = elastic
	return job
}

// TestTorchrunCommandLine: the static rendezvous, the default of a job that
// is not elastic, gives each replica its own node rank, a fixed number of
// replicas and the first rank's address; c10d and etcd meet at the first
// rank's endpoint, and an elastic job, which gets c10d, runs with its range.
func TestTorchrunCommandLine(t *testing.T) {
	const master = "master-0.j.ns.svc"
	elastic := &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](5)}
	program := []string{"train.py", "--epochs", "3"}
	cases := []struct {
		name    string
		tc      *v1beta1.TorchrunConfig
		elastic *v1beta1.ElasticConfig
		// want is each replica's command line by its hostname.
		want map[string][]string
	}{
		{"static by default", &v1beta1.TorchrunConfig{Enabled: true}, nil, map[string][]string{
			"master-0": {"torchrun", "--nnodes=3", "--nproc-per-node=1", "--rdzv-backend=static",
				"--master-addr=" + master, "--master-port=23456", "--node-rank=0", "--rdzv-id=uid-j", "--max-restarts=0"},
			"worker-0": {"torchrun", "--nnodes=3", "--nproc-per-node=1", "--rdzv-backend=static",
				"--master-addr=" + master, "--master-port=23456", "--node-rank=1", "--rdzv-id=uid-j", "--max-restarts=0"},
			"worker-1": {"torchrun", "--nnodes=3", "--nproc-per-node=1", "--rdzv-backend=static",
				"--master-addr=" + master, "--master-port=23456", "--node-rank=2", "--rdzv-id=uid-j", "--max-restarts=0"},
		}},
		{"static named, with options", &v1beta1.TorchrunConfig{Enabled: true, RdzvBackend: v1beta1.RendezvousBackendStatic,
			ProcPerNode: "gpu", MaxRestarts: ptr.To[int32](2), ExtraOptions: []string{"--master-port=29500"}}, nil, map[string][]string{
			"master-0": {"torchrun", "--nnodes=3", "--nproc-per-node=gpu", "--rdzv-backend=static",
				"--master-addr=" + master, "--master-port=23456", "--node-rank=0", "--rdzv-id=uid-j", "--max-restarts=2",
				"--master-port=29500"},
			"worker-1": {"torchrun", "--nnodes=3", "--nproc-per-node=gpu", "--rdzv-backend=static",
				"--master-addr=" + master, "--master-port=23456", "--node-rank=2", "--rdzv-id=uid-j", "--max-restarts=2",
				"--master-port=29500"},
		}},
		{"c10d named", &v1beta1.TorchrunConfig{Enabled: true, RdzvBackend: v1beta1.RendezvousBackendC10d}, nil, map[string][]string{
			"master-0": {"torchrun", "--nnodes=3", "--nproc-per-node=1", "--rdzv-backend=c10d",
				"--rdzv-endpoint=" + master + ":23456", "--rdzv-id=uid-j", "--max-restarts=0"},
			"worker-1": {"torchrun", "--nnodes=3", "--nproc-per-node=1", "--rdzv-backend=c10d",
				"--rdzv-endpoint=" + master + ":23456", "--rdzv-id=uid-j", "--max-restarts=0"},
		}},
		{"etcd-v2 named", &v1beta1.TorchrunConfig{Enabled: true, RdzvBackend: v1beta1.RendezvousBackendEtcdV2}, nil, map[string][]string{
			"worker-0": {"torchrun", "--nnodes=3", "--nproc-per-node=1", "--rdzv-backend=etcd-v2",
				"--rdzv-endpoint=" + master + ":23456", "--rdzv-id=uid-j", "--max-restarts=0"},
		}},
		{"elastic gets c10d", &v1beta1.TorchrunConfig{Enabled: true}, elastic, map[string][]string{
			"master-0": {"torchrun", "--nnodes=2:5", "--nproc-per-node=1", "--rdzv-backend=c10d",
				"--rdzv-endpoint=" + master + ":23456", "--rdzv-id=uid-j", "--max-restarts=0"},
			"worker-1": {"torchrun", "--nnodes=2:5", "--nproc-per-node=1", "--rdzv-backend=c10d",
				"--rdzv-endpoint=" + master + ":23456", "--rdzv-id=uid-j", "--max-restarts=0"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := ptJob(tc.tc, tc.elastic)
			b := &Builder{Adapter: PyTorch, Job: job, Topology: NewTopology(PyTorch, job, "")}
			for hostname, want := range tc.want {
				pod, err := b.Pod(replicaOf(t, hostname))
				if err != nil {
					t.Fatal(err)
				}
				c := pod.Spec.Containers[0]
				if diff := cmp.Diff(append(want, program...), c.Command); diff != "" {
					t.Errorf("%s: command differs (-want +got):\n%s", hostname, diff)
				}
				if len(c.Args) != 0 {
					t.Errorf("%s: args %q, want them at the end of the command", hostname, c.Args)
				}
			}
		})
	}
}

// TestTorchrunNotEnabled: without torchrun the container's command stays,
// and no PET_* variable is set.
func TestTorchrunNotEnabled(t *testing.T) {
	for _, tc := range []*v1beta1.TorchrunConfig{nil, {RdzvBackend: v1beta1.RendezvousBackendStatic}} {
		job := ptJob(tc, nil)
		b := &Builder{Adapter: PyTorch, Job: job, Topology: NewTopology(PyTorch, job, "")}
		pod, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker, Index: 1})
		if err != nil {
			t.Fatal(err)
		}
		c := pod.Spec.Containers[0]
		if want := []string{"python3", "-u", "train.py"}; !cmp.Equal(c.Command, want) {
			t.Errorf("torchrunConfig %+v: command %q, want %q", tc, c.Command, want)
		}
		for _, e := range c.Env {
			if len(e.Name) > 4 && e.Name[:4] == "PET_" {
				t.Errorf("torchrunConfig %+v: %s=%q set without torchrun", tc, e.Name, e.Value)
			}
		}
	}
}

// TestTorchrunEnv: every replica gets the first rank's address and its own
// rank, in the variables torch.distributed reads and in the PET_* ones
// torchrun reads, with the rendezvous the job runs. An elastic job's
// replicas get no WORLD_SIZE, which changes as the job scales.
func TestTorchrunEnv(t *testing.T) {
	const master = "master-0.j.ns.svc.cluster.local"
	elastic := &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](5)}
	cases := []struct {
		name    string
		tc      *v1beta1.TorchrunConfig
		elastic *v1beta1.ElasticConfig
		backend string
	}{
		{"static by default", &v1beta1.TorchrunConfig{Enabled: true}, nil, "static"},
		{"c10d named", &v1beta1.TorchrunConfig{Enabled: true, RdzvBackend: v1beta1.RendezvousBackendC10d}, nil, "c10d"},
		{"elastic gets c10d", &v1beta1.TorchrunConfig{Enabled: true}, elastic, "c10d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := ptJob(tc.tc, tc.elastic)
			b := &Builder{Adapter: PyTorch, Job: job, Topology: NewTopology(PyTorch, job, "cluster.local")}
			nnodes := "3"
			if tc.elastic != nil {
				nnodes = "2:5"
			}
			for hostname, rank := range map[string]string{"master-0": "0", "worker-0": "1", "worker-1": "2"} {
				pod, err := b.Pod(replicaOf(t, hostname))
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]string{
					"MASTER_ADDR": master, "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": rank,
					"PET_NNODES": nnodes, "PET_NODE_RANK": rank, "PET_NPROC_PER_NODE": "1",
					"PET_MASTER_ADDR": master, "PET_MASTER_PORT": "23456",
					"PET_RDZV_BACKEND": tc.backend, "PET_MAX_RESTARTS": "0",
				}
				if tc.elastic != nil {
					delete(want, "WORLD_SIZE")
				}
				got := map[string]string{}
				for _, e := range pod.Spec.Containers[0].Env {
					if _, ok := want[e.Name]; ok || e.Name == "WORLD_SIZE" {
						got[e.Name] = e.Value
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: environment differs (-want +got):\n%s", hostname, diff)
				}
			}
		})
	}
}

// replicaOf is the replica of a hostname such as worker-1.
func replicaOf(t *testing.T, hostname string) ReplicaID {
	t.Helper()
	for _, r := range []ReplicaID{
		{Type: v1beta1.ReplicaTypeMaster}, {Type: v1beta1.ReplicaTypeWorker}, {Type: v1beta1.ReplicaTypeWorker, Index: 1},
	} {
		if r.Hostname() == hostname {
			return r
		}
	}
	t.Fatalf("no replica is named %s", hostname)
	return ReplicaID{}
}
