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
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TensorFlowKind is the kind of TensorFlowTrainingJob.
const TensorFlowKind = batch.TensorFlowTrainingJobKind

// tensorFlowAdapter wires TensorFlow replicas together through TF_CONFIG.
type tensorFlowAdapter struct{}

// TensorFlow is the adapter of TensorFlowTrainingJob.
var TensorFlow Adapter = tensorFlowAdapter{}

var _ ClusterPublisher = tensorFlowAdapter{}

func (tensorFlowAdapter) Kind() string                  { return TensorFlowKind }
func (tensorFlowAdapter) Resource() string              { return v1beta1.TensorFlowTrainingJobResource }
func (tensorFlowAdapter) TrainingContainerName() string { return v1beta1.TensorFlowContainerName }
func (tensorFlowAdapter) PortNames() []string           { return batch.TensorFlowPortNames() }
func (tensorFlowAdapter) DefaultPort() int32            { return v1beta1.TensorFlowDefaultPort }

// RankOrder keeps the list order: TensorFlow has no global rank, and indices
// are per type.
func (tensorFlowAdapter) RankOrder(specs []v1beta1.ReplicaSpec) []v1beta1.ReplicaSpec {
	return specs
}

// tfConfig is the TF_CONFIG document. The field order is the order
// TensorFlow's documentation writes it in; the cluster map is written with
// sorted keys, so equal jobs get byte-equal variables. A replica's
// TF_CONFIG holds the same bytes json.Marshal makes of it, the cluster
// written once, in the job's cluster ConfigMap (Env).
type tfConfig struct {
	Cluster     map[string][]string `json:"cluster"`
	Task        tfTask              `json:"task"`
	Environment string              `json:"environment"`
}

type tfTask struct {
	Type  string `json:"type"`
	Index int32  `json:"index"`
}

// ClusterValues publishes TF_CONFIG's cluster, which lists every chief,
// worker and ps replica. The evaluator is left out of it, also in its own
// TF_CONFIG, because TensorFlow treats it as a side job outside the
// training cluster (a cluster that names it is rejected by the estimator
// and by the multi-worker strategies), which is also what Kubeflow does.
func (tensorFlowAdapter) ClusterValues(t *Topology) (ClusterData, error) {
	cluster := map[string][]string{}
	for _, g := range t.Groups {
		if g.Type == v1beta1.ReplicaTypeEvaluator || g.Replicas == 0 {
			continue
		}
		addrs := make([]string, 0, g.Replicas)
		for i := int32(0); i < g.Replicas; i++ {
			addrs = append(addrs, hostPort(t.Address(ReplicaID{Type: g.Type, Index: i}), g.Port))
		}
		cluster[string(g.Type)] = addrs
	}
	clusterJSON, err := json.Marshal(cluster)
	if err != nil {
		return ClusterData{}, fmt.Errorf("encoding TF_CONFIG's cluster: %w", err)
	}
	return ClusterData{Env: map[string]string{batch.EnvTFCluster: string(clusterJSON)}}, nil
}

// Env sets TF_CONFIG: the cluster, published in the job's cluster
// ConfigMap as TENSORSTACK_TF_CLUSTER, with the replica's task around it.
// The kubelet replaces $(TENSORSTACK_TF_CLUSTER) with the cluster as the
// container starts, since the variable comes before TF_CONFIG; the pod
// holds only the reference.
func (a tensorFlowAdapter) Env(t *Topology) (ReplicaEnv, error) {
	if err := t.LimitError(); err != nil {
		return nil, err
	}
	cluster := t.clusterEnv(batch.EnvTFCluster)
	const prefix = `{"cluster":$(` + batch.EnvTFCluster + `),"task":`
	const suffix = `,"environment":"cloud"}`
	return func(r ReplicaID) ([]corev1.EnvVar, error) {
		task, err := json.Marshal(tfTask{Type: string(r.Type), Index: r.Index})
		if err != nil {
			return nil, fmt.Errorf("encoding TF_CONFIG's task: %w", err)
		}
		return []corev1.EnvVar{cluster, envVar("TF_CONFIG", prefix+string(task)+suffix)}, nil
	}, nil
}

func (tensorFlowAdapter) Entrypoint(*Topology, ReplicaID, *corev1.Container) {}

// GangMember: every type but the evaluator, which is outside the training
// cluster (see Env), reads checkpoints at its own pace and holds up no one.
// Within the group it would count toward minCount and could be placed
// instead of a trainer.
func (tensorFlowAdapter) GangMember(t v1beta1.ReplicaType) bool {
	return t != v1beta1.ReplicaTypeEvaluator
}

// Leaders: the chief and every parameter server, which the workers contact
// as soon as they start (batch.TensorFlowLeaderTypes).
func (tensorFlowAdapter) Leaders(t *Topology) []ReplicaID {
	var out []ReplicaID
	for _, typ := range batch.TensorFlowLeaderTypes() {
		if g := t.Group(v1beta1.ReplicaType(typ)); g != nil {
			for i := range g.Replicas {
				out = append(out, ReplicaID{Type: g.Type, Index: i})
			}
		}
	}
	return out
}

// Decider: the chief, else worker 0, else (a job of parameter servers or
// evaluators only, which never succeeds by itself) the first replica.
func (tensorFlowAdapter) Decider(t *Topology) (ReplicaID, bool) {
	for _, typ := range []v1beta1.ReplicaType{v1beta1.ReplicaTypeChief, v1beta1.ReplicaTypeWorker} {
		if g := t.Group(typ); g != nil && g.Replicas > 0 {
			return ReplicaID{Type: typ}, true
		}
	}
	return t.firstReplica()
}

// Succeeded: the chief decides when there is one, else worker 0. PS and
// evaluator replicas never decide.
func (tensorFlowAdapter) Succeeded(t *Topology, phases ReplicaPhases) bool {
	if g := t.Group(v1beta1.ReplicaTypeChief); g != nil && g.Replicas > 0 {
		return phases.Succeeded(ReplicaID{Type: v1beta1.ReplicaTypeChief})
	}
	if g := t.Group(v1beta1.ReplicaTypeWorker); g != nil && g.Replicas > 0 {
		return phases.Succeeded(ReplicaID{Type: v1beta1.ReplicaTypeWorker})
	}
	return false
}
