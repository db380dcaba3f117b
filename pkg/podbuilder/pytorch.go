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
	"path"
	"regexp"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// PyTorchKind is the kind of PyTorchTrainingJob.
const PyTorchKind = batch.PyTorchTrainingJobKind

// pyTorchAdapter wires PyTorch replicas together through torch.distributed's
// environment (MASTER_ADDR and friends) and, optionally, torchrun.
type pyTorchAdapter struct{}

// PyTorch is the adapter of PyTorchTrainingJob.
var PyTorch Adapter = pyTorchAdapter{}

// RejoinsOnScale: an elastic PyTorch job's replicas join and leave the
// running group (torchrun's elastic agent re-forms it); their environment
// does not depend on the count.
func (pyTorchAdapter) RejoinsOnScale() {}

var _ Rejoining = pyTorchAdapter{}

func (pyTorchAdapter) Kind() string                  { return PyTorchKind }
func (pyTorchAdapter) Resource() string              { return v1beta1.PyTorchTrainingJobResource }
func (pyTorchAdapter) TrainingContainerName() string { return v1beta1.PyTorchContainerName }
func (pyTorchAdapter) PortNames() []string           { return batch.PyTorchPortNames() }
func (pyTorchAdapter) DefaultPort() int32            { return v1beta1.PyTorchDefaultPort }

// RankOrder puts the master type first and keeps the list order otherwise.
// torch.distributed's rank 0 hosts the store every other rank connects to at
// MASTER_ADDR, so the master has to be rank 0 wherever it is listed.
func (pyTorchAdapter) RankOrder(specs []v1beta1.ReplicaSpec) []v1beta1.ReplicaSpec {
	m := -1
	for i := range specs {
		if specs[i].Type == v1beta1.ReplicaTypeMaster {
			m = i
			break
		}
	}
	if m <= 0 {
		return specs
	}
	out := make([]v1beta1.ReplicaSpec, 0, len(specs))
	out = append(out, specs[m])
	out = append(out, specs[:m]...)
	return append(out, specs[m+1:]...)
}

// master is the replica that hosts the rendezvous: rank 0, the first replica
// of the first type in rank order that has any.
func (pyTorchAdapter) master(t *Topology) (ReplicaID, int32) {
	for _, g := range t.Groups {
		if g.Replicas > 0 {
			return ReplicaID{Type: g.Type}, g.Port
		}
	}
	return ReplicaID{}, v1beta1.PyTorchDefaultPort
}

// Decider: the master, rank 0.
func (pyTorchAdapter) Decider(t *Topology) (ReplicaID, bool) { return t.firstReplica() }

// Leaders: the master, which hosts the rendezvous every other rank joins.
func (a pyTorchAdapter) Leaders(t *Topology) []ReplicaID {
	if t.Total == 0 {
		return nil
	}
	m, _ := a.master(t)
	return []ReplicaID{m}
}

// torchrunSettings are a job's torchrun options with defaults filled in.
type torchrunSettings struct {
	procPerNode, maxRestarts string
	backend                  v1beta1.RendezvousBackend
	extra                    []string
}

// torchrun returns the torchrun options of a job that starts its training
// containers through torchrun.
func torchrun(t *Topology) (torchrunSettings, bool) {
	job, ok := t.Job.(*v1beta1.PyTorchTrainingJob)
	if !ok || job.Spec.TorchrunConfig == nil || !job.Spec.TorchrunConfig.Enabled {
		return torchrunSettings{}, false
	}
	tc := job.Spec.TorchrunConfig
	s := torchrunSettings{
		procPerNode: tc.ProcPerNode,
		backend:     tc.RdzvBackend,
		maxRestarts: "0",
		extra:       tc.ExtraOptions,
	}
	if s.procPerNode == "" {
		s.procPerNode = v1beta1.DefaultProcPerNode
	}
	if s.backend == "" {
		// The API fills it in, on every read too; this is for a job that
		// never went through it.
		s.backend = v1beta1.DefaultRendezvousBackend(&job.Spec)
	}
	if tc.MaxRestarts != nil {
		s.maxRestarts = itoa(*tc.MaxRestarts)
	}
	return s, true
}

// Env sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE (replicas of the job), RANK
// and PYTHONUNBUFFERED=1; with torchrun also the PET_* variables torchrun
// reads its options from, as Kubeflow's PyTorchJob sets them. Only the ranks
// differ between replicas.
func (a pyTorchAdapter) Env(t *Topology) (ReplicaEnv, error) {
	if err := t.LimitError(); err != nil {
		return nil, err
	}
	m, port := a.master(t)
	addr, portText, total := t.Address(m), itoa(port), itoa(t.Total)
	var torchrunVars []corev1.EnvVar
	if s, ok := torchrun(t); ok {
		torchrunVars = []corev1.EnvVar{
			envVar("PET_NNODES", nnodes(t)),
			{Name: "PET_NODE_RANK"}, // the replica's rank, set below
			envVar("PET_NPROC_PER_NODE", s.procPerNode),
			envVar("PET_MASTER_ADDR", addr),
			envVar("PET_MASTER_PORT", portText),
			envVar("PET_RDZV_BACKEND", string(s.backend)),
			envVar("PET_MAX_RESTARTS", s.maxRestarts),
		}
	}
	return func(r ReplicaID) ([]corev1.EnvVar, error) {
		rank := itoa(t.Rank(r))
		vars := make([]corev1.EnvVar, 0, 5+len(torchrunVars))
		vars = append(vars, envVar("MASTER_ADDR", addr), envVar("MASTER_PORT", portText))
		if t.Elastic == nil {
			// An elastic job's size changes under running pods, whose
			// environment cannot; torchrun tells its workers the size.
			vars = append(vars, envVar("WORLD_SIZE", total))
		}
		vars = append(vars, envVar("RANK", rank), envVar(batch.EnvPythonUnbuffered, "1"))
		for _, v := range torchrunVars {
			if v.Name == "PET_NODE_RANK" {
				v.Value = rank
			}
			vars = append(vars, v)
		}
		return vars, nil
	}, nil
}

// nnodes is torchrun's --nnodes: the job's replicas, or an elastic job's
// range ("1:4"), within which its agents re-form the group as replicas
// come and go.
func nnodes(t *Topology) string {
	if t.Elastic != nil {
		return t.Elastic.String()
	}
	return itoa(t.Total)
}

// pythonInterpreter matches python, python3, python3.12 and paths to them.
var pythonInterpreter = regexp.MustCompile(`^python[0-9.]*$`)

// Entrypoint, with torchrun enabled, starts the training container of a
// replica as
//
//	torchrun --nnodes=<replicas of the job, or min:max when elastic> --nproc-per-node=<procPerNode>
//	  --rdzv-backend=<rdzvBackend> <where to meet> --rdzv-id=<job uid>
//	  --max-restarts=<maxRestarts> <extraOptions...> [--no-python] <program...>
//
// where to meet is, for the static rendezvous, the first rank's address
// and the replica's own rank among the job's (--master-addr=<MASTER_ADDR>
// --master-port=<MASTER_PORT> --node-rank=<RANK>), and for any other
// --rdzv-endpoint=<MASTER_ADDR>:<MASTER_PORT>, where the agents are ranked
// as they join.
//
// The program is the container's command followed by its args. A leading
// Python interpreter (python, python3, /usr/bin/python3.11, with a
// following -u) is dropped, since torchrun starts the script with its own
// interpreter; any other command is kept and torchrun told --no-python. With
// no command, the args are the program, as T9k documents (`torchrun <options>
// <args>`). extraOptions come after the generated options, so an extra option
// such as --rdzv-endpoint for an etcd backend, or --master-port, overrides
// the generated one.
func (a pyTorchAdapter) Entrypoint(t *Topology, r ReplicaID, c *corev1.Container) {
	s, ok := torchrun(t)
	if !ok {
		return
	}
	m, port := a.master(t)
	cmd := []string{
		"torchrun",
		"--nnodes=" + nnodes(t),
		"--nproc-per-node=" + s.procPerNode,
		"--rdzv-backend=" + string(s.backend),
	}
	if s.backend == v1beta1.RendezvousBackendStatic {
		// torchrun makes the endpoint of a static rendezvous from these, so
		// that a --master-port among the extra options still takes effect.
		cmd = append(cmd, "--master-addr="+t.Address(m), "--master-port="+itoa(port), "--node-rank="+itoa(t.Rank(r)))
	} else {
		cmd = append(cmd, "--rdzv-endpoint="+hostPort(t.Address(m), port))
	}
	cmd = append(cmd,
		"--rdzv-id="+string(t.Job.GetUID()),
		"--max-restarts="+s.maxRestarts,
	)
	cmd = append(cmd, s.extra...)
	program := c.Command
	if len(program) > 0 && pythonInterpreter.MatchString(path.Base(program[0])) {
		program = program[1:]
		for len(program) > 0 && program[0] == "-u" {
			program = program[1:]
		}
	} else if len(program) > 0 {
		cmd = append(cmd, "--no-python")
	}
	cmd = append(cmd, program...)
	cmd = append(cmd, c.Args...)
	c.Command = cmd
	c.Args = nil
}

// GangMember: every replica; all of them rendezvous before training starts.
func (pyTorchAdapter) GangMember(v1beta1.ReplicaType) bool { return true }

// Succeeded: with a master type, when the master succeeded; otherwise when
// every replica succeeded.
func (pyTorchAdapter) Succeeded(t *Topology, phases ReplicaPhases) bool {
	if g := t.Group(v1beta1.ReplicaTypeMaster); g != nil && g.Replicas > 0 {
		return phases.Succeeded(ReplicaID{Type: v1beta1.ReplicaTypeMaster})
	}
	return t.Total > 0 && phases.AllSucceeded()
}
