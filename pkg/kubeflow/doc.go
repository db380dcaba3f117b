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

// Package kubeflow converts Kubeflow training-operator manifests (kubeflow.org/v1
// TFJob, PyTorchJob, XGBoostJob and MPIJob) and mpi-operator's
// (kubeflow.org/v2beta1 MPIJob) into TensorStack jobs
// (batch.tensorstack.dev/v1beta1 TensorFlowTrainingJob, PyTorchTrainingJob,
// XGBoostTrainingJob and MPIJob).
//
// Every field of the input is either converted or reported: the input is read
// as generic JSON objects, each field is taken out as it is converted, and any
// field left over (outside the pod templates) becomes a Warning with its path.
// Pod templates are core PodTemplateSpecs in both APIs and are carried over
// whole; one that does not decode strictly is an error.
//
// What is converted:
//
//   - metadata: name, generateName, namespace, labels and annotations. Fields
//     the server sets (uid, resourceVersion, creationTimestamp, generation,
//     managedFields, ...) are dropped silently; ownerReferences, finalizers
//     and kubectl's last-applied-configuration annotation are dropped with a
//     warning. A non-empty status is dropped with a warning.
//   - the replica maps (spec.tfReplicaSpecs, spec.pytorchReplicaSpecs,
//     spec.xgbReplicaSpecs, spec.mpiReplicaSpecs), keyed by replica type in
//     any case as Kubeflow accepts, become the ordered list
//     spec.replicaSpecs: TensorFlow chief (Kubeflow's Master is an alias of
//     Chief), ps, worker, evaluator; PyTorch and XGBoost master, worker, so
//     that the master has rank 0; MPI launcher, worker. Each replica's
//     restartPolicy is written out, with Kubeflow's default where it is
//     absent (Never for TFJob, XGBoostJob and MPIJob, OnFailure for
//     PyTorchJob, whose default differs from ours). An MPIJob's
//     slotsPerWorker is kept; its mainContainer is reported unless it is the
//     first container. mpi-operator's MPIJob restarts its launcher OnFailure
//     by default; its sshAuthMountPath is kept, its mpiImplementation Intel
//     becomes IntelMPI, its launcherCreationPolicy and waitForWorkers need
//     nothing (our launcher waits for the workers), and
//     runLauncherAsWorker: true is reported.
//   - runPolicy, also read from the top level of spec as older manifests
//     write it (runPolicy wins when both are given): cleanPodPolicy becomes
//     cleanUpPolicy (All and None as they are; Running becomes Unfinished,
//     its nearest match: Running deletes the pods still running, Unfinished
//     those not terminated, pending ones too; absent becomes None, Kubeflow's
//     default, where ours defaults to Unfinished); activeDeadlineSeconds,
//     backoffLimit and ttlSecondsAfterFinished keep their names; suspend: true becomes
//     spec.runMode.pause.enabled; schedulingPolicy.queue becomes
//     spec.scheduler.t9kScheduler.queue (a Kueue LocalQueue in ours).
//   - PyTorch: elasticPolicy's minReplicas and maxReplicas become spec.elastic
//     (with Kubeflow's defaulting of a missing end). Kubeflow never starts
//     torchrun itself: the container's command does, reading the PET_*
//     variables the operator sets. Ours sets them only when
//     spec.torchrunConfig is enabled, and then starts torchrun itself. So
//     torchrun is enabled exactly when every replica's training container
//     starts torchrun (torchrun ... or python -m torch.distributed.run ...):
//     the launcher is taken off the command (leaving the Python interpreter,
//     which our controller replaces by torchrun), its options become
//     torchrunConfig.extraOptions, and nprocPerNode (auto, Kubeflow's
//     default, as gpu when every replica asks for GPUs), rdzvBackend,
//     maxRestarts, rdzvId, rdzvConf, standalone and rdzvHost with rdzvPort
//     become torchrun settings. Our torchrun gets --nnodes=<replicas>, not
//     Kubeflow's min:max range. A job without elasticPolicy.rdzvBackend gets
//     ours by default: static when not elastic, which is torchrun's own
//     default and so what a Kubeflow job without an elasticPolicy runs, and
//     c10d when elastic.
//
// What is reported and not converted: schedulingPolicy's minAvailable,
// priorityClass, minResources and scheduleTimeoutSeconds; runPolicy.managedBy;
// TFJob successPolicy AllWorkers (ours applies the chief, else worker 0, rule)
// and enableDynamicWorker; PyTorch elasticPolicy.metrics, torchrun settings of
// a job whose containers do not start torchrun, and values ours cannot
// express (nprocPerNode auto or cpu on nodes without GPUs, a rendezvous host
// without a port).
package kubeflow
