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
	"math"
	"strings"
	"sync"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// ReplicaGroup is one replica type of a job as the machinery sees it.
type ReplicaGroup struct {
	Spec *v1beta1.ReplicaSpec
	Type v1beta1.ReplicaType
	// Replicas is the number of replicas, never negative.
	Replicas int32
	// Port is the type's port, from the training container.
	Port int32
	// FirstRank is the global rank of the type's replica 0.
	FirstRank int32
}

// Topology is what every replica needs to know about the whole job. It is
// computed once per reconcile.
type Topology struct {
	Job       v1beta1.TrainingJob
	Name      string
	Namespace string
	// Groups are the replica types in rank order.
	Groups []ReplicaGroup
	// Total is the number of replicas of the job, exact while the job is
	// within the limits (see limitError).
	Total int32
	// requested is the number of replicas the spec asks for, summed without
	// overflow.
	requested int64
	// Elastic is the replica range of an elastic PyTorch job, whose last
	// group in rank order is scaled; nil for other jobs.
	Elastic *ElasticRange
	// SSHSecret is the Secret an MPI job's pods mount its key pair from
	// (SSHSecretName, or the one its running pods mount: SSHSecretOf).
	SSHSecret string
	// ClusterConfigMap is the ConfigMap the job's addresses are published
	// in, for a kind that publishes them (ClusterConfigMapName).
	ClusterConfigMap string
	// addressSuffix ends every replica address: ".<job>.<ns>.svc[.<domain>]".
	addressSuffix string
	shape         string

	publisher   ClusterPublisher
	clusterOnce sync.Once
	cluster     ClusterData
	clusterErr  error
}

func NewTopology(a Adapter, job v1beta1.TrainingJob, clusterDomain string) *Topology {
	t := &Topology{Job: job, Name: job.GetName(), Namespace: job.GetNamespace(), SSHSecret: SSHSecretName(job),
		ClusterConfigMap: ClusterConfigMapName(job)}
	t.publisher, _ = a.(ClusterPublisher)
	t.addressSuffix = "." + t.Name + "." + t.Namespace + ".svc"
	if d := strings.Trim(clusterDomain, "."); d != "" {
		t.addressSuffix += "." + d
	}
	seen := map[v1beta1.ReplicaType]bool{}
	ordered := a.RankOrder(job.CommonSpec().ReplicaSpecs)
	for i := range ordered {
		spec := &ordered[i]
		typ := spec.Type
		if typ == "" || seen[typ] {
			// Validation forbids both; never act on them twice.
			continue
		}
		seen[typ] = true
		n := max(v1beta1.ReplicasOf(spec), 0)
		t.Groups = append(t.Groups, ReplicaGroup{
			Spec:      spec,
			Type:      typ,
			Replicas:  n,
			Port:      replicaPort(a, spec),
			FirstRank: t.Total,
		})
		t.requested += int64(n)
		t.Total = int32(min(t.requested, math.MaxInt32))
	}
	_, rejoining := a.(Rejoining)
	t.scaleElastic(!rejoining)
	return t
}

// firstReplica is index 0 of the first type in rank order that has replicas.
func (t *Topology) firstReplica() (ReplicaID, bool) {
	for _, g := range t.Groups {
		if g.Replicas > 0 {
			return ReplicaID{Type: g.Type}, true
		}
	}
	return ReplicaID{}, false
}

// ElasticRange is how many replicas in all an elastic job may run with.
type ElasticRange struct {
	Min, Max int32
	// Reform: the job re-forms at each new size, every pod replaced and
	// told the new count (a kind that is not Rejoining); otherwise
	// replicas join and leave the running ones.
	Reform bool
}

// Rejoining is an adapter whose kind's replicas join and leave a running
// group when an elastic job scales (torchrun's elastic agent), so that
// scaling replaces no pod. An elastic job of another kind re-forms at each
// new size.
type Rejoining interface {
	RejoinsOnScale()
}

// String is the range as torchrun's --nnodes takes it.
func (e ElasticRange) String() string { return itoa(e.Min) + ":" + itoa(e.Max) }

// scaleElastic gives an elastic job's last group in rank order the count
// that makes the job's total its elastic total (batch.ElasticTotal); the
// other groups keep theirs.
func (t *Topology) scaleElastic(reform bool) {
	job, ok := t.Job.(v1beta1.ElasticJob)
	if !ok || len(t.Groups) == 0 {
		return
	}
	total, elastic := v1beta1.ElasticTotal(job)
	if !elastic {
		return
	}
	e := job.ElasticSpec()
	t.Elastic = &ElasticRange{Min: ptrValue(e.MinReplicas, 1), Max: ptrValue(e.MaxReplicas, int32(min(total, math.MaxInt32))), Reform: reform}
	last := &t.Groups[len(t.Groups)-1]
	fixed := t.requested - int64(last.Replicas)
	n := max(total-fixed, 0)
	t.requested = fixed + n
	last.Replicas = int32(min(n, math.MaxInt32))
	t.Total = int32(min(t.requested, math.MaxInt32))
}

// Scaled says whether the group at index gi is the one an elastic job
// scales: the last in rank order.
func (t *Topology) Scaled(gi int) bool { return t.Elastic != nil && gi == len(t.Groups)-1 }

func ptrValue(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// Shape is the job's replica counts in rank order ("chief:1,worker:3"),
// what every replica was told about the cluster; the scaled group of an
// elastic job whose replicas rejoin shows its range ("worker:1:4"), so
// scaling replaces no pod.
func (t *Topology) Shape() string {
	if t.shape == "" {
		var b strings.Builder
		for i, g := range t.Groups {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(string(g.Type))
			b.WriteByte(':')
			if t.Scaled(i) && !t.Elastic.Reform {
				// Replicas of the scaled group come and go; the others
				// are told the range, not the count.
				b.WriteString(t.Elastic.String())
				continue
			}
			b.WriteString(itoa(g.Replicas))
		}
		t.shape = b.String()
	}
	return t.shape
}

// LimitError says why the job is beyond the limits every job keeps, or nil:
// too many replicas or types, or addresses too large to publish
// (ClusterSizeError). Validation refuses such a job, and admission one
// whose addresses are too large (pkg/admission/jobpods), so only one stored
// before the limits existed, or addresses made longer by the controller's
// cluster domain, can be; the controller builds nothing for it, as the pods, the
// slots and the status of what it claims could exhaust the controller's
// memory or etcd's request size.
func (t *Topology) LimitError() error {
	if t.requested > batch.MaxTotalReplicas {
		return fmt.Errorf("the job asks for %d replicas, over the maximum of %d per job", t.requested, batch.MaxTotalReplicas)
	}
	if n := len(t.Groups); n > batch.MaxReplicaTypes {
		return fmt.Errorf("the job has %d replica types, over the maximum of %d per job", n, batch.MaxReplicaTypes)
	}
	_, err := t.Cluster()
	return err
}

// Group returns the group of a replica type, or nil.
func (t *Topology) Group(typ v1beta1.ReplicaType) *ReplicaGroup {
	for i := range t.Groups {
		if t.Groups[i].Type == typ {
			return &t.Groups[i]
		}
	}
	return nil
}

// Address is the DNS name of a replica within the job's headless Service.
func (t *Topology) Address(r ReplicaID) string {
	return r.Hostname() + t.addressSuffix
}

// Rank is the global rank of a replica.
func (t *Topology) Rank(r ReplicaID) int32 {
	if g := t.Group(r.Type); g != nil {
		return g.FirstRank + r.Index
	}
	return 0
}
