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
	"strings"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// XGBoostKind is the kind of XGBoostTrainingJob.
const XGBoostKind = batch.XGBoostTrainingJobKind

// xgboostAdapter wires XGBoost replicas together through the tracker on the
// master: rank 0, which every replica, the master included, joins.
type xgboostAdapter struct{}

// XGBoost is the adapter of XGBoostTrainingJob.
var XGBoost Adapter = xgboostAdapter{}

var _ ClusterPublisher = xgboostAdapter{}

func (xgboostAdapter) Kind() string                  { return XGBoostKind }
func (xgboostAdapter) Resource() string              { return v1beta1.XGBoostTrainingJobResource }
func (xgboostAdapter) TrainingContainerName() string { return v1beta1.XGBoostContainerName }
func (xgboostAdapter) PortNames() []string           { return batch.XGBoostPortNames() }
func (xgboostAdapter) DefaultPort() int32            { return v1beta1.XGBoostDefaultPort }

// RankOrder puts the master first, as for PyTorch: it is rank 0, the host
// of the tracker.
func (xgboostAdapter) RankOrder(specs []v1beta1.ReplicaSpec) []v1beta1.ReplicaSpec {
	return PyTorch.RankOrder(specs)
}

// Env gives every replica the master's address and port (MASTER_ADDR,
// MASTER_PORT), the number of replicas (WORLD_SIZE) and its rank (RANK), the
// workers' addresses (WORKER_ADDRS, published in the job's cluster
// ConfigMap) and port (WORKER_PORT), as Kubeflow's
// XGBoostJob does, and the same in the variables XGBoost's collective reads
// (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_NUM_WORKER, DMLC_TASK_ID). Only
// the ranks differ between replicas.
func (a xgboostAdapter) Env(t *Topology) (ReplicaEnv, error) {
	if err := t.LimitError(); err != nil {
		return nil, err
	}
	master := ReplicaID{Type: v1beta1.ReplicaTypeMaster}
	port := int32(v1beta1.XGBoostDefaultPort)
	if g := t.Group(v1beta1.ReplicaTypeMaster); g != nil {
		port = g.Port
	}
	addr, portText, total := t.Address(master), itoa(port), itoa(t.Total)
	workerPort := portText
	if g := t.Group(v1beta1.ReplicaTypeWorker); g != nil {
		workerPort = itoa(g.Port)
	}
	shared := []corev1.EnvVar{
		envVar("MASTER_ADDR", addr),
		envVar("MASTER_PORT", portText),
		envVar("WORLD_SIZE", total),
		t.clusterEnv(batch.EnvXGBoostWorkerAddrs),
		envVar("WORKER_PORT", workerPort),
		envVar("DMLC_TRACKER_URI", addr),
		envVar("DMLC_TRACKER_PORT", portText),
		envVar("DMLC_NUM_WORKER", total),
		envVar(batch.EnvPythonUnbuffered, "1"),
	}
	return func(r ReplicaID) ([]corev1.EnvVar, error) {
		rank := itoa(t.Rank(r))
		vars := make([]corev1.EnvVar, 0, len(shared)+2)
		vars = append(vars, shared...)
		return append(vars, envVar("RANK", rank), envVar("DMLC_TASK_ID", rank)), nil
	}, nil
}

// ClusterValues publishes the workers' addresses (WORKER_ADDRS).
func (xgboostAdapter) ClusterValues(t *Topology) (ClusterData, error) {
	var workerAddrs []string
	if g := t.Group(v1beta1.ReplicaTypeWorker); g != nil {
		workerAddrs = make([]string, 0, g.Replicas)
		for i := range g.Replicas {
			workerAddrs = append(workerAddrs, t.Address(ReplicaID{Type: g.Type, Index: i}))
		}
	}
	return ClusterData{Env: map[string]string{batch.EnvXGBoostWorkerAddrs: strings.Join(workerAddrs, ",")}}, nil
}

func (xgboostAdapter) Entrypoint(*Topology, ReplicaID, *corev1.Container) {}

// GangMember: every replica; all of them join the tracker before training
// starts.
func (xgboostAdapter) GangMember(v1beta1.ReplicaType) bool { return true }

// Leaders: the master, which hosts the tracker.
func (xgboostAdapter) Leaders(t *Topology) []ReplicaID {
	if g := t.Group(v1beta1.ReplicaTypeMaster); g != nil && g.Replicas > 0 {
		return []ReplicaID{{Type: v1beta1.ReplicaTypeMaster}}
	}
	return nil
}

// Decider: the master, rank 0; a job without one is invalid, and shows
// its first replica.
func (xgboostAdapter) Decider(t *Topology) (ReplicaID, bool) { return t.firstReplica() }

// Succeeded: when the master succeeded. The workers end with it: the
// collective finishes on every rank together.
func (xgboostAdapter) Succeeded(t *Topology, phases ReplicaPhases) bool {
	if g := t.Group(v1beta1.ReplicaTypeMaster); g != nil && g.Replicas > 0 {
		return phases.Succeeded(ReplicaID{Type: v1beta1.ReplicaTypeMaster})
	}
	return false
}
