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
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// GenericKind is the kind of GenericJob.
const GenericKind = batch.GenericJobKind

// genericAdapter runs replicas of the user's own types. It knows no
// framework: it tells every container where every replica is, and the
// job's success and failure rules decide how it ends.
type genericAdapter struct{}

// Generic is the adapter of GenericJob.
var Generic Adapter = genericAdapter{}

var (
	_ FailureJudge     = genericAdapter{}
	_ ClusterPublisher = genericAdapter{}
)

func (genericAdapter) Kind() string     { return GenericKind }
func (genericAdapter) Resource() string { return v1beta1.GenericJobResource }

// TrainingContainerName is empty: the training container of a replica is
// its first.
func (genericAdapter) TrainingContainerName() string { return "" }

// PortNames and DefaultPort: none. A type's port is the first one its
// training container declares (genericPort).
func (genericAdapter) PortNames() []string { return nil }
func (genericAdapter) DefaultPort() int32  { return 0 }

// RankOrder keeps the list order: ranks follow the replica specs.
func (genericAdapter) RankOrder(specs []v1beta1.ReplicaSpec) []v1beta1.ReplicaSpec { return specs }

// genericPort is the first port the training container of a type declares,
// 0 when it declares none.
func genericPort(a Adapter, spec *v1beta1.ReplicaSpec) int32 {
	if i := TrainingContainer(a, &spec.Template.Spec); i >= 0 {
		for _, p := range spec.Template.Spec.Containers[i].Ports {
			if p.ContainerPort > 0 {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// ClusterValues publishes the whole job's addresses: TENSORSTACK_CLUSTER
// (JSON, by type) and per type TENSORSTACK_<TYPE>_HOSTS.
func (a genericAdapter) ClusterValues(t *Topology) (ClusterData, error) {
	env := make(map[string]string, len(t.Groups)+1)
	cluster := make(map[string][]string, len(t.Groups))
	for _, g := range t.Groups {
		port := genericPort(a, g.Spec)
		hosts := make([]string, 0, g.Replicas)
		addresses := make([]string, 0, g.Replicas)
		for i := range g.Replicas {
			host := t.Address(ReplicaID{Type: g.Type, Index: i})
			hosts = append(hosts, host)
			if port > 0 {
				host = hostPort(host, port)
			}
			addresses = append(addresses, host)
		}
		cluster[string(g.Type)] = addresses
		env[batch.GenericHostsEnv(string(g.Type))] = strings.Join(hosts, ",")
	}
	// json.Marshal writes a map's keys sorted: equal jobs, equal bytes.
	document, err := json.Marshal(cluster)
	if err != nil {
		return ClusterData{}, err
	}
	env[batch.EnvCluster] = string(document)
	return ClusterData{Env: env}, nil
}

// Env gives every replica the whole job's addresses, published in the
// job's cluster ConfigMap (ClusterValues), and per type that declares a
// port TENSORSTACK_<TYPE>_PORT; and its own place: TENSORSTACK_REPLICA_TYPE,
// TENSORSTACK_REPLICA_INDEX, TENSORSTACK_RANK and TENSORSTACK_WORLD_SIZE. A
// framework's own variables (JAX's coordinator, Paddle's endpoints) are made
// from these in the container's command.
func (a genericAdapter) Env(t *Topology) (ReplicaEnv, error) {
	if err := t.LimitError(); err != nil {
		return nil, err
	}
	shared := []corev1.EnvVar{envVar(batch.EnvWorldSize, itoa(t.Total)), t.clusterEnv(batch.EnvCluster)}
	for _, g := range t.Groups {
		shared = append(shared, t.clusterEnv(batch.GenericHostsEnv(string(g.Type))))
		if port := genericPort(a, g.Spec); port > 0 {
			shared = append(shared, envVar(batch.GenericPortEnv(string(g.Type)), itoa(port)))
		}
	}
	sort.SliceStable(shared, func(i, j int) bool { return shared[i].Name < shared[j].Name })
	return func(r ReplicaID) ([]corev1.EnvVar, error) {
		vars := make([]corev1.EnvVar, 0, len(shared)+3)
		vars = append(vars, shared...)
		return append(vars,
			envVar(batch.EnvReplicaType, string(r.Type)),
			envVar(batch.EnvReplicaIndex, itoa(r.Index)),
			envVar(batch.EnvRank, itoa(t.Rank(r)))), nil
	}, nil
}

func (genericAdapter) Entrypoint(*Topology, ReplicaID, *corev1.Container) {}

// GangMember: every replica; the user's types are all part of the job.
func (genericAdapter) GangMember(v1beta1.ReplicaType) bool { return true }

// Leaders: the first replica, rank 0, which the others most often meet at
// (JAX's coordinator, a Paddle or MLX rank 0).
func (genericAdapter) Leaders(t *Topology) []ReplicaID {
	if r, ok := t.firstReplica(); ok {
		return []ReplicaID{r}
	}
	return nil
}

// Decider: the first replica a success rule names, else rank 0.
func (genericAdapter) Decider(t *Topology) (ReplicaID, bool) {
	if job, ok := t.Job.(*v1beta1.GenericJob); ok {
		for _, rule := range job.Spec.SuccessRules {
			for _, s := range rule.Replicas {
				if g := t.Group(s.Type); g != nil && g.Replicas > 0 {
					if len(s.Indexes) > 0 {
						return ReplicaID{Type: s.Type, Index: s.Indexes[0]}, true
					}
					return ReplicaID{Type: s.Type}, true
				}
			}
		}
	}
	return t.firstReplica()
}

// Succeeded: as soon as every replica one of the success rules names has
// succeeded; without rules, when every replica has.
func (genericAdapter) Succeeded(t *Topology, phases ReplicaPhases) bool {
	job, ok := t.Job.(*v1beta1.GenericJob)
	if !ok || len(job.Spec.SuccessRules) == 0 {
		return t.Total > 0 && phases.AllSucceeded()
	}
	for _, rule := range job.Spec.SuccessRules {
		if ruleHolds(t, rule, phases.Succeeded) {
			return true
		}
	}
	return false
}

// FailsJob: as soon as every replica one of the failure rules names has
// failed for good; without rules, as soon as any replica has.
func (genericAdapter) FailsJob(t *Topology, failed func(ReplicaID) bool) bool {
	job, ok := t.Job.(*v1beta1.GenericJob)
	if !ok || len(job.Spec.FailureRules) == 0 {
		for _, g := range t.Groups {
			for i := range g.Replicas {
				if failed(ReplicaID{Type: g.Type, Index: i}) {
					return true
				}
			}
		}
		return false
	}
	for _, rule := range job.Spec.FailureRules {
		if ruleHolds(t, rule, failed) {
			return true
		}
	}
	return false
}

// ruleHolds says whether every replica the rule names is as holds says.
// A rule naming no replica the job has (validation refuses one) never
// holds.
func ruleHolds(t *Topology, rule v1beta1.ReplicaRule, holds func(ReplicaID) bool) bool {
	named := 0
	for _, s := range rule.Replicas {
		g := t.Group(s.Type)
		if g == nil {
			return false
		}
		indexes := s.Indexes
		if len(indexes) == 0 {
			for i := range g.Replicas {
				indexes = append(indexes, i)
			}
		}
		for _, i := range indexes {
			if i < 0 || i >= g.Replicas || !holds(ReplicaID{Type: s.Type, Index: i}) {
				return false
			}
			named++
		}
	}
	return named > 0
}
