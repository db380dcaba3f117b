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

import "strings"

// The environment the controller gives the containers of a job's pods: the
// names a pod template may not set itself. The controller's value replaces
// a template's, so a template's would be lost without a word; validation
// refuses it instead. The adapters of pkg/podbuilder set these names, and
// their tests check that they set no other.

// Variables every container of every kind gets: the job's name, and the
// checkpoint contract of a job with spec.runPolicy.checkpoint.
const (
	EnvJobName      = "TENSORSTACK_JOB_NAME"
	EnvJobNamespace = "TENSORSTACK_JOB_NAMESPACE"
	// EnvJobResource is the job kind's resource, e.g. pytorchtrainingjobs.
	EnvJobResource = "TENSORSTACK_JOB_RESOURCE"

	EnvCheckpointDir         = "TENSORSTACK_CHECKPOINT_DIR"
	EnvCheckpointInterval    = "TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS"
	EnvCheckpointRequestFile = "TENSORSTACK_CHECKPOINT_REQUEST_FILE"
	EnvResumeFrom            = "TENSORSTACK_RESUME_FROM"
	EnvResumeStep            = "TENSORSTACK_RESUME_STEP"
	// EnvAttempt is the number of the job's attempt (status.attempts) a
	// container runs in, under the InPlace restart strategy.
	EnvAttempt = "TENSORSTACK_ATTEMPT"
	// EnvTrainingScript is the path of the job's spec.trainer.script in
	// its containers, set when the job has one.
	EnvTrainingScript = "TRAINING_SCRIPT"
)

// EnvPythonUnbuffered is set to 1 for the Python frameworks so that their
// logs appear as they are written. It is only a default: a template that
// sets it keeps its own value.
const EnvPythonUnbuffered = "PYTHONUNBUFFERED"

// JobEnvNames are the variables of every kind.
func JobEnvNames() []string {
	return []string{EnvJobName, EnvJobNamespace, EnvJobResource, EnvCheckpointDir, EnvCheckpointInterval,
		EnvCheckpointRequestFile, EnvResumeFrom, EnvResumeStep, EnvAttempt, EnvTrainingScript}
}

// EnvTFCluster holds TF_CONFIG's cluster, read from the job's cluster
// ConfigMap, which TF_CONFIG refers to ($(TENSORSTACK_TF_CLUSTER)) so that
// the kubelet writes the cluster into it as the container starts.
const EnvTFCluster = "TENSORSTACK_TF_CLUSTER"

// TensorFlowEnvNames are a TensorFlow job's own: TF_CONFIG and the cluster
// it is made of.
func TensorFlowEnvNames() []string { return []string{EnvTFCluster, "TF_CONFIG"} }

// PyTorchEnvNames are a PyTorch job's own: the master's address, the world
// and the rank, and with torchrun the PET_* options torchrun reads.
func PyTorchEnvNames() []string {
	return []string{"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PET_NNODES", "PET_NODE_RANK",
		"PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_RDZV_BACKEND", "PET_MAX_RESTARTS"}
}

// XGBoostEnvNames are an XGBoost job's own: Kubeflow's XGBoostJob
// variables and those of XGBoost's collective.
func XGBoostEnvNames() []string {
	return []string{"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", EnvXGBoostWorkerAddrs, "WORKER_PORT",
		"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_NUM_WORKER", "DMLC_TASK_ID"}
}

// EnvXGBoostWorkerAddrs is an XGBoost job's workers' addresses,
// comma-separated.
const EnvXGBoostWorkerAddrs = "WORKER_ADDRS"

// GenericEnvPrefix starts every variable a generic job's pods get from the
// controller: the names below and one pair per replica type,
// TENSORSTACK_<TYPE>_HOSTS and TENSORSTACK_<TYPE>_PORT.
const GenericEnvPrefix = "TENSORSTACK_"

// The variables that tell a generic job's replica where it stands.
const (
	// EnvReplicaType and EnvReplicaIndex are the replica's type and its
	// index within the type.
	EnvReplicaType  = "TENSORSTACK_REPLICA_TYPE"
	EnvReplicaIndex = "TENSORSTACK_REPLICA_INDEX"
	// EnvRank is the replica's rank across the job, in the order of the
	// replica specs; EnvWorldSize the number of replicas.
	EnvRank      = "TENSORSTACK_RANK"
	EnvWorldSize = "TENSORSTACK_WORLD_SIZE"
	// EnvCluster is every replica's address, as JSON: {"<type>":
	// ["<host>:<port>", ...]}, without ":<port>" for a type whose training
	// container declares no port.
	EnvCluster = "TENSORSTACK_CLUSTER"
)

// GenericEnvNames are a generic job's own variables of fixed names.
func GenericEnvNames() []string {
	return []string{EnvReplicaType, EnvReplicaIndex, EnvRank, EnvWorldSize, EnvCluster}
}

// GenericHostsEnv and GenericPortEnv name the variables of a replica type
// of a generic job: its replicas' DNS names, comma-separated, and its port.
// A type's name is a DNS label, upper-cased with its dashes as underscores.
func GenericHostsEnv(replicaType string) string {
	return GenericEnvPrefix + envWord(replicaType) + "_HOSTS"
}
func GenericPortEnv(replicaType string) string {
	return GenericEnvPrefix + envWord(replicaType) + "_PORT"
}

func envWord(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// The variables that point an MPI job's mpirun at its hostfile and give the
// ssh it starts the ranks with its options, for each implementation. Open
// MPI 5 starts its ranks with PRRTE, which reads its own names only (from
// Open MPI 5.0.6 it no longer translates Open MPI 4's), and Open MPI 4
// ignores PRRTE's: an Open MPI launcher gets both.
const (
	EnvOpenMPIHostfile       = "OMPI_MCA_orte_default_hostfile"
	EnvOpenMPIRshArgs        = "OMPI_MCA_plm_rsh_args"
	EnvOpenMPIKeepFQDN       = "OMPI_MCA_orte_keep_fqdn_hostnames"
	EnvPRRTEHostfile         = "PRTE_MCA_prte_default_hostfile"
	EnvPRRTESSHArgs          = "PRTE_MCA_plm_ssh_args"
	EnvPRRTEKeepFQDN         = "PRTE_MCA_prte_keep_fqdn_hostnames"
	EnvIntelMPIHostfile      = "I_MPI_HYDRA_HOST_FILE"
	EnvIntelMPIBootstrapArgs = "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"
	EnvMPICHHostfile         = "HYDRA_HOST_FILE"
	EnvMPICHLaunchExtraArgs  = "HYDRA_LAUNCH_EXTRA_ARGS"
)

// EnvMPIExports is, on an Open MPI launcher, the mpirun options that pass
// the launcher's job and checkpoint variables and the API's address to the
// ranks ("-x NAME ..."), so that a rank reports progress and checkpoints as
// any replica does: a rank runs under a worker's SSH server, whose
// environment has none of them, and Open MPI passes nothing by itself
// (Intel MPI and MPICH pass everything). It is options rather than Open
// MPI's mca_base_env_list, which Open MPI refuses beside any -x.
const EnvMPIExports = "TENSORSTACK_MPI_EXPORTS"

// MPIEnvNames are an MPI job's own variables, of every implementation.
func MPIEnvNames() []string {
	return []string{EnvOpenMPIHostfile, EnvOpenMPIRshArgs, EnvOpenMPIKeepFQDN,
		EnvPRRTEHostfile, EnvPRRTESSHArgs, EnvPRRTEKeepFQDN, EnvIntelMPIHostfile,
		EnvIntelMPIBootstrapArgs, EnvMPICHHostfile, EnvMPICHLaunchExtraArgs, EnvMPIExports}
}
