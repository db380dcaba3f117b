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
// Both kinds share one machinery (Controller and its per-job reconciler).
// What differs between them is answered by a small Adapter per kind: the
// order in which ranks are handed out, the environment each replica gets,
// how the training container is started, and when the job has succeeded.
//
// Decisions this package takes where the API contract is silent are listed
// in the comments of the functions that make them; the most visible ones:
//
//   - A replica's address is <type>-<index>.<job>.<namespace>.svc, or, with
//     a cluster domain configured, <type>-<index>.<job>.<namespace>.svc.<domain>.
//   - TF_CONFIG's cluster lists chief, worker and ps, never evaluator (as in
//     Kubeflow and TensorFlow's own estimator rules); the evaluator gets the
//     same cluster and its own task.
//   - PyTorch ranks: the master replica (type master, else index 0 of the
//     first type with replicas) has rank 0; the other types follow in list
//     order.
//   - The controller's environment is set in every container and init
//     container of a replica; a user entry with the same name is replaced.
//   - A job has been paused once its Paused condition was True; from then on
//     pods are created with the resumeSpecs' command and args.
//   - Success of a replica under restartPolicy Always restarts it without
//     counting against backoffLimit; only failures use up the backoff.
package controller
