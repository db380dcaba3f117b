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

// Package controller runs TensorFlowTrainingJobs and PyTorchTrainingJobs: it
// creates each job's pods and headless Service, replaces failed replicas
// according to the restart policies, pauses, resumes and debugs jobs, runs
// the optional TensorBoard, and reports what it sees in the job's status.
//
// Both kinds share one machinery (Controller and its per-job reconciler, in
// the shape of Kubernetes' Job controller: informers filtered to objects
// with the job-name label, a typed rate-limited work queue keyed by kind,
// namespace and name, expectations, adoption of labelled orphans). What
// differs between the kinds is answered by a small Adapter per kind
// (tensorflow.go, pytorch.go): the order in which ranks are handed out, the
// environment each replica gets, how the training container is started, and
// when the job has succeeded.
//
// Decisions taken where the API contract (api.md) is silent:
//
//   - Addresses: a replica is <type>-<index>.<job>.<namespace>.svc; with
//     Options.ClusterDomain (flag --cluster-domain, empty by default) it is
//     <type>-<index>.<job>.<namespace>.svc.<domain>.
//   - TF_CONFIG's cluster lists chief, worker and ps, never evaluator (as in
//     Kubeflow, and as TensorFlow's estimator and multi-worker strategies
//     require); the evaluator gets the same cluster and its own task.
//   - PyTorch ranks: the master replica (type master, else index 0 of the
//     first type with replicas) has rank 0 wherever it is listed; the other
//     types follow in list order.
//   - torchrun: see pyTorchAdapter.Entrypoint for the exact command.
//   - The environment is set in every container and init container of a
//     replica; a template entry with the same name is replaced.
//   - Debug pods run the debug command with no args and keep their
//     environment; torchrun is not applied to them. Their exits are never
//     counted, they are recreated; the active deadline still applies.
//   - Resume: a job has been paused once its Paused condition was True (it
//     stays, turned False with reason Resumed); from then on every pod it
//     creates takes command and args, each where given, from the matching
//     resumeSpec, and drops init containers where asked.
//   - A pod carries the annotation batch.tensorstack.dev/run-mode (Immediate
//     or Debug); when the job's mode changes, pods of the other mode are
//     replaced. Mode changes are not restarts.
//   - Phases: Pending until every replica's pod is Running or Succeeded,
//     then Running, which later restarts do not undo; Resuming likewise after
//     a pause. While pods are being deleted for a pause, the phase stays and
//     the Paused condition is True with reason Pausing; Paused once none is
//     left. Unknown is never set.
//   - Restarts: failures use up backoffLimit; a success replaced under
//     restartPolicy Always, a disruption and a debug exit do not. Every
//     replacement counts in the type's restartCount. With ExitCode, a pod
//     that failed without any exit code is retried.
//   - A restart is recorded in the status before the pod is deleted: the
//     replica's entry turns Deleted with the old pod's UID. A failure is
//     thus counted once even if the delete fails or the cache is stale; the
//     new pod is created under the same name once the old one is gone.
//   - Outcome order in one reconcile: success rule, then deadline, then
//     failures. On DeadlineExceeded, running pods are deleted whatever the
//     clean-up policy; then the clean-up policy applies.
//   - Status write first, actions second: nothing is created or deleted on
//     the strength of a status that could not be written.
//   - Limits: a job beyond batch.MaxTotalReplicas or batch.MaxReplicaTypes
//     (validation refuses one; only a job stored before the limits existed
//     can be) is not acted on: no slots, pods or replica statuses are built
//     for it and none of its pods is created or deleted. Its ReplicaFailure
//     condition is True with reason TooManyReplicas, with a Warning event of
//     that reason, and its phase is Pending if it had none; the job is not
//     failed, so lowering its replicas lets it run (the condition then turns
//     False, reason ReplicasWithinLimit). A legacy activeDeadlineSeconds over
//     batch.MaxActiveDeadlineSeconds counts as that maximum.
//   - Cost per reconcile: the environment every replica shares (TF_CONFIG's
//     cluster, the PyTorch master's address) is computed once, and pods are
//     built one at a time, each just before it is created, so memory follows
//     the job's size within the cap and not what a spec claims.
//   - A status write refused for its size (413, etcd's "request is too
//     large", or a 422 about lengths) is reported: a Warning event
//     StatusTooLarge and, on the status last stored, ReplicaFailure True with
//     reason StatusTooLarge. Nothing is created or deleted until a status
//     fits again (then the condition turns False, reason StatusStored); the
//     job is retried with backoff.
//   - TensorBoard: Deployment and Service <job>-tensorboard; each PVC of
//     trainingLogFilesets is mounted read-only once at /t9k/logs/<pvc>; one
//     fileset gives --logdir=<dir>, several --logdir_spec=<pvc>/<path>:<dir>,...;
//     plus --bind_all --port=6006. Its pods are labelled
//     batch.tensorstack.dev/tensorboard=<job>, not job-name, so the job's
//     headless Service does not select them. It keeps running after the job
//     finished and is removed when tensorboardSpec is.
//   - Events (reasons): SuccessfulCreate, SuccessfulDelete, SuccessfulUpdate,
//     FailedCreate, FailedDelete, Restarting, Paused, Resumed, Succeeded,
//     ReplicaFailed, BackoffLimitExceeded, DeadlineExceeded, TTLExpired,
//     Adopted, NameConflict, TooManyReplicas, StatusTooLarge.
package controller
