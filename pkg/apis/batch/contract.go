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

package batch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
)

// The rules of the API contract that validation (on the internal types) and
// the controller, the CLI and the Kubeflow converter (on the v1beta1 types)
// must apply alike: the names of what the controller creates, the default
// replica count, the training container and its ports, and the form of a
// training log location. Each is written once, here, on plain strings and
// core types so that both type families can call it; v1beta1/well_known.go
// wraps the ones its callers know by a v1beta1 name.

// Container names and default ports of the training replicas.
const (
	TensorFlowContainerName = "tensorflow"
	PyTorchContainerName    = "pytorch"
	XGBoostContainerName    = "xgboost"
	TensorFlowDefaultPort   = 2222
	PyTorchDefaultPort      = 23456
	// XGBoostDefaultPort is the port of the tracker on the master.
	XGBoostDefaultPort = 9999
)

// ScriptDir is where every container of a job with spec.trainer.script
// finds the script, read-only, under its name; EnvTrainingScript holds the
// script's path.
const ScriptDir = "/var/run/tensorstack/script"

// ScriptPath is the path of a script of the given name in the containers.
func ScriptPath(name string) string { return ScriptDir + "/" + name }

// FieldStatusPhase is the field selector label of a job's phase; the
// selectable fields of a job are metadata.name, metadata.namespace and it.
const FieldStatusPhase = "status.phase"

// DefaultReplicas is the replica count of a replica spec that sets none, as
// defaulting fills it in.
const DefaultReplicas int32 = 1

// Hostname is a replica's hostname within the job's headless Service:
// <type>-<index>.
func Hostname(replicaType string, index int32) string {
	return replicaType + "-" + strconv.Itoa(int(index))
}

// PodName is the name of a replica's pod: <job>-<type>-<index>, the job name
// followed by the replica's hostname.
func PodName(job, replicaType string, index int32) string {
	return job + "-" + Hostname(replicaType, index)
}

// TensorBoardName is the name of a job's TensorBoard Deployment and Service:
// <job>-tensorboard.
func TensorBoardName(job string) string { return job + "-tensorboard" }

// ReplicasOrDefault is the replica count a spec's replicas field stands for:
// unset means DefaultReplicas.
func ReplicasOrDefault(replicas *int32) int32 {
	if replicas == nil {
		return DefaultReplicas
	}
	return *replicas
}

// ReplicasOf is how many replicas a replica type asks for; an unset count
// means 1, as defaulting sets it.
func ReplicasOf(spec *ReplicaSpec) int32 { return ReplicasOrDefault(spec.Replicas) }

// TrainingContainer is the index in containers of the container that runs
// the training program: the one named name (TensorFlowContainerName or
// PyTorchContainerName), else the first; -1 when there are none.
func TrainingContainer(containers []corev1.Container, name string) int {
	for i := range containers {
		if containers[i].Name == name {
			return i
		}
	}
	if len(containers) == 0 {
		return -1
	}
	return 0
}

// TensorFlowPortNames are the names a port of a TensorFlow training
// container carries to be the one the replicas reach each other on, in order
// of preference: ours, then Kubeflow's. Without such a port the replicas use
// TensorFlowDefaultPort.
func TensorFlowPortNames() []string { return []string{"tensorflow", "tfjob-port"} }

// PyTorchPortNames are the names a port of a PyTorch training container
// carries to be the rendezvous port, in order of preference: ours, then
// Kubeflow's. Without such a port the replicas use PyTorchDefaultPort.
func PyTorchPortNames() []string { return []string{"pytorch", "pytorchjob-port"} }

// XGBoostPortNames are the names a port of an XGBoost training container
// carries to be the tracker's port, in order of preference: ours, then
// Kubeflow's. Without such a port the tracker listens on XGBoostDefaultPort.
func XGBoostPortNames() []string { return []string{"xgboost", "xgboostjob-port"} }

// DefaultSSHAuthMountPath is where an MPI job's containers find its SSH
// key pair unless the job says otherwise: root's.
const DefaultSSHAuthMountPath = "/root/.ssh"

// DefaultSlotsPerWorker is an MPI job's slotsPerWorker unless it says
// otherwise.
const DefaultSlotsPerWorker int32 = 1

// MaxSlotsPerWorker is the most MPI processes an MPI job's worker may run.
const MaxSlotsPerWorker = 1024

// MPIImplementations are the values of an MPI job's mpiImplementation.
func MPIImplementations() []string {
	return []string{string(MPIImplementationOpenMPI), string(MPIImplementationIntelMPI), string(MPIImplementationMPICH)}
}

// ElasticEnabled says whether an elastic range is switched on.
func ElasticEnabled(e *ElasticConfig) bool { return e != nil && e.Enabled }

// ElasticScaledType is the replica type an elastic job scales, as an index
// into specs: the last in rank order, or -1 without types. A PyTorch
// master ranks first wherever it is listed (masterFirst); a GenericJob's
// types rank in list order. fixed is the sum of the other types' counts,
// which the job keeps as they are.
func ElasticScaledType(specs []ReplicaSpec, masterFirst bool) (scaled int, fixed int64) {
	scaled = len(specs) - 1
	for i := range specs {
		if masterFirst && specs[i].Type == ReplicaTypeMaster && i == scaled && len(specs) > 1 {
			// The master ranks first wherever it is listed.
			scaled = i - 1
		}
	}
	for i := range specs {
		if i != scaled {
			fixed += int64(ReplicasOf(&specs[i]))
		}
	}
	return scaled, fixed
}

// ElasticTotal is how many replicas in all an elastic job runs:
// expectedReplicas when set, else the sum of its types' counts brought
// within [minReplicas, maxReplicas]. Unset ends do not bound it.
func ElasticTotal(requested int64, minReplicas, maxReplicas, expected *int32) int64 {
	if expected != nil {
		return int64(*expected)
	}
	n := requested
	if maxReplicas != nil && n > int64(*maxReplicas) {
		n = int64(*maxReplicas)
	}
	if minReplicas != nil && n < int64(*minReplicas) {
		n = int64(*minReplicas)
	}
	return n
}

// RunLength is how long a job's current run has lasted: from its start
// until its completion, or until now while it runs; false before it started.
// kubectl get's DURATION and kubectl training status show it.
func RunLength(start, completion *metav1.Time, now time.Time) (time.Duration, bool) {
	if start == nil {
		return 0, false
	}
	end := now
	if completion != nil {
		end = completion.Time
	}
	return end.Sub(start.Time), true
}

// TensorFlowLeaderTypes are the replica types a TensorFlow job's other
// replicas wait for under the InOrder startup policy: the chief and the
// parameter servers, which workers contact as soon as they start. A PyTorch
// job's leader is its master replica, the host of the rendezvous.
func TensorFlowLeaderTypes() []string { return []string{"chief", "ps"} }

// FilesetPrefix starts every training log location (a TensorBoard's
// trainingLogFilesets entry): a path inside a PersistentVolumeClaim of the
// job's namespace, t9k://pvc/<pvc-name>/<path>.
const FilesetPrefix = "t9k://pvc/"

// Messages about a training log location's form, as validation reports them
// on the field.
const (
	filesetForm      = "must have the form t9k://pvc/<pvc-name>/<path>"
	filesetNoPVC     = filesetForm + ": the PVC name is missing"
	filesetNoPath    = filesetForm + ": the path within the PVC is missing"
	filesetDotDot    = "the path within the PVC may not contain '..'"
	filesetNULInPath = "the path within the PVC may not contain NUL characters"
)

// splitFileset cuts a training log location after FilesetPrefix into the PVC
// name and the path within the PVC, as written; ok is false without the
// prefix.
func splitFileset(fileset string) (pvc, path string, ok bool) {
	rest, ok := strings.CutPrefix(fileset, FilesetPrefix)
	if !ok {
		return "", "", false
	}
	pvc, path, _ = strings.Cut(rest, "/")
	return pvc, path, true
}

// ParseFileset splits a training log location, t9k://pvc/<pvc-name>/<path>,
// into the PVC name and the path within the PVC as written (what follows the
// slash after the PVC name, possibly empty). It fails only when the location
// cannot be split: without the t9k://pvc/ prefix or without a PVC name; the
// error's text is the message validation reports for the field.
// FilesetErrors applies the rest of the rules.
func ParseFileset(fileset string) (pvc, path string, err error) {
	pvc, path, ok := splitFileset(fileset)
	switch {
	case !ok:
		return "", "", errors.New(filesetForm)
	case pvc == "":
		return "", "", errors.New(filesetNoPVC)
	}
	return pvc, path, nil
}

// FilesetErrors describes everything that is wrong with a training log
// location, which must be t9k://pvc/<pvc-name>/<path>: a valid PVC name and
// a path that stays within the PVC. It returns nil for a valid location.
func FilesetErrors(fileset string) []string {
	pvc, path, ok := splitFileset(fileset)
	if !ok {
		return []string{filesetForm}
	}
	var errs []string
	if pvc == "" {
		errs = append(errs, filesetNoPVC)
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(pvc) {
			errs = append(errs, fmt.Sprintf("PVC name %q: %s", pvc, msg))
		}
	}
	if strings.Trim(path, "/") == "" {
		errs = append(errs, filesetNoPath)
	}
	for _, segment := range strings.Split(path, "/") {
		if segment == ".." {
			errs = append(errs, filesetDotDot)
			break
		}
	}
	if strings.ContainsRune(path, 0) {
		errs = append(errs, filesetNULInPath)
	}
	return errs
}
