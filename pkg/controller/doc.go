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

// Package controller runs the training jobs of every kind (batch.Kinds): it
// creates each job's pods and headless Service, replaces failed replicas
// according to the restart policies, pauses, resumes and debugs jobs, runs
// the optional TensorBoard, and reports what it sees in the job's status.
//
// Both kinds share one machinery (Controller and its per-job reconciler, in
// the shape of Kubernetes' Job controller: informers filtered to objects
// with the job-name label, a typed rate-limited work queue keyed by kind,
// namespace and name, expectations, adoption of labelled orphans). The pods
// and the Service it creates are built by pkg/podbuilder, which the API
// server's admission also uses to preview them; what differs between the
// kinds is answered there by a small Adapter per kind: the order in which
// ranks are handed out, the environment each replica gets, how the training
// container is started, and when the job has succeeded.
//
// Where things are (every file of the package is named here; TestDocMapsEveryFile fails otherwise):
//
//   - The reconcile: reconcile.go states its order (observe, each policy
//     in turn, act) and applies the policies' decisions; decision.go: what
//     a step decided, as a value reconcile.go applies, and how a step
//     ends the job (an ending, finished once by planActive); plan.go: the
//     state one reconcile observes and plans on (the reconciler, whose
//     decided holds the events, deletes and next look act carries out)
//     and apply; slot.go: one replica and its pod, as the plan sees them; act.go: carrying the plan out, the only place that writes the
//     status (and what it reads and writes first: a stall's and the failed
//     replicas' log tails; the attempts an in-place restart asks of the pods
//     and releases);
//     replicas.go: the replica slots, the pods claimed into them,
//     and what those pods are doing; kinds.go: what each kind adds to the
//     shared machinery (its adapter, informer, lister and client calls).
//   - The policies, each a pure function over API types with a table test
//     beside it (<name>_policy.go, <name>_policy_test.go):
//     checkpointstop_policy.go (the stop that asks for a checkpoint first,
//     as a state machine), deadline_policy.go (the active deadline),
//     backoff_policy.go (when a replica whose pod exited starts again),
//     success_policy.go (the success rule), stall_policy.go (the hang
//     watchdog), pause_policy.go (pause and debug), failurerules_policy.go
//     (what a replica's exit means: the failure rules, disruptions, the
//     restart policies), accounting_policy.go (where a job's time went, and
//     the work an interruption lost), startorder_policy.go (when the
//     replicas behind the leaders start), startblockers_policy.go (what
//     holds a start up, and the start timeout), startsettle_policy.go (one
//     status write for a start, not one per replica), elastic_policy.go (an
//     elastic job's sizes), queue_policy.go (what a queued job's Queued
//     condition says, and what it asks of its Workload),
//     suspectnodes_policy.go (the nodes a failure blames), cleanup_policy.go
//     (a finished job's pods, and its TTL), statussize_policy.go (what a
//     status refused for its size goes without), inplace_policy.go (a
//     whole-job restart in place: whether the pods allow it, which to ask
//     for the attempt, to release it to, to give up on, whose agent stops).
//     shape_test.go keeps them so: no policy declares a reconciler method
//     or takes a context.
//   - Carrying the policies out on the status copy: restarts.go (a
//     replica's exit observed; replicas replaced, one or all; a suspect
//     node noted), inplace.go (inplace_policy.go's decisions recorded for
//     act.go to write; pods that cannot restart in place where they may run
//     made as under Recreate, with inplacenodes.go, the nodes' declared
//     features), failurerules_generic.go (a replica failed for good,
//     tolerated while a GenericJob's failure rules let it be), stops.go (a
//     pause, a resume and every stop of the running pods, after the checkpoint it asks for), stall.go (a stall's
//     condition, event and restart), attempts.go (each start of
//     the pods, how it ended, what failed in it), finish.go (the finish,
//     clean-up and TTL, as decisions), gang.go and queue.go (what the reconcile decides
//     about the gang and the queue), dispatched.go (a job MultiKueue runs
//     elsewhere).
//   - statusderive.go and statuswrites.go: the status, its conditions (the
//     finish among them) and how it is written; events.go: the events a plan decides (each reason
//     is defined beside the policy that sets it); pods.go: claiming and
//     creating what the job owns (its pods, its Service and the ConfigMap of
//     the addresses its pods refer to); sshkeys.go: an
//     MPI job's SSH key pair Secret; podannotations.go:
//     how the controller talks to a running pod (startup gates, checkpoint
//     requests, resume points); logtail.go: the end of a replica's log, kept
//     before its pod goes, and logtailreads.go: those reads, run off the
//     reconcile's path; mountfailures.go: the kubelet's FailedMount
//     events; podoutcome.go: a pod's outcome read from its containers;
//     finalizer.go: the replica-outcome finalizer; expectations.go: what the
//     cache has not shown yet.
//   - types.go: the Controller and its Options; controller.go: building
//     and running it, its workers; watch.go: what the informers feed the
//     queues; lanes.go: the main and urgent queues; cachetrim.go: what the
//     caches keep of an object; finishedjobs.go: finished jobs are not
//     cached, and how the little they still need reaches them.
//   - metrics.go and jobseries.go: the controller's metrics and the per-job
//     series made at scrape time; policy.go: what the policies read of a
//     pod and a spec (disruption, exit code, restart policy, backoff limit,
//     clean-up policy).
//   - Integrations, each a package behind the few calls the reconcile
//     makes: owner (which objects are a job's, adoption, owned objects by
//     name), gang (Workload API and coscheduling backends), kueue (the
//     Workload, and whether Kueue can be used), tensorboard, servingcert
//     (the certificates the controller-manager issues); served answers
//     discovery for gang and kueue.
//   - tuning: the controller of hyperparameter searches (TuningJobs),
//     which the controller-manager runs beside this one. It makes a
//     search's trials as jobs of the kinds above and pauses and resumes
//     them through their API, never their pods.
//
// What the controller decides where the API contract is silent (addresses,
// restarts, outcomes, gangs, priorities, TensorBoard) is in docs/controller.md.
//
// Reasons: every reason the controller gives an event or a condition, so
// that one met in kubectl describe can be found here and then in the code
// (doc_test.go checks this list against the code):
//
//   - What a job owns (package owner): SuccessfulCreate, SuccessfulDelete,
//     SuccessfulUpdate, FailedCreate, FailedDelete, Adopted, NameConflict.
//   - Starting: CreatingReplicas, ReplicasCreated, ReplicasRunning,
//     ReplicasHealthy, LeadersReady, FailedMount, StartTimeoutExceeded.
//   - Restarts: Restarting, BackOff, RestartingJob, RestartingInPlace,
//     RecreatingInstead, NoNodeRestartsInPlace, AttemptReleased,
//     NodeSuspect, PodFailurePolicy, FailureTolerated.
//   - Outcomes: Succeeded, Failed, ReplicaFailed, BackoffLimitExceeded,
//     DeadlineExceeded, TTLExpired, Stalled, Progressing,
//     ProgressDeadlineExceeded.
//   - Pauses, resizes and checkpoints: Pausing, Paused, Resumed, Scaled,
//     CheckpointRequested, CheckpointWritten, CheckpointTimedOut.
//   - Limits: TooManyReplicas, ReplicasWithinLimit, StatusTooLarge,
//     StatusStored.
//   - Gangs: GangPlaced, WaitingForGang, NoGangScheduler.
//   - Queues (package kueue): Admitted, WaitingForAdmission, Unqueued,
//     QueueNameRequired, QueueNameRemoved, QueueingUnavailable,
//     TooManyPodSets, PrebuiltWorkloadMismatch, AdoptedWorkload, Syncing,
//     Available, Disabled, Forbidden, NotInstalled, NotServed, NotChecked,
//     CheckFailed, SuspectNodeAssigned.
//   - TensorBoard (package tensorboard): Creating, CreateFailed,
//     InvalidSpec, Unavailable.
//   - Certificates (package servingcert): EtcdCAIssued, EtcdCARenewed,
//     EtcdCertificateIssued, ServingCertSecretMissing,
//     ServingCertSecretNotManaged.
//   - Searches (package tuning), on the TuningJob: TrialCreated,
//     TrialPaused, TrialPromoted, TrialStopped, TrialFailed, TrialLost;
//     its conditions' TrialsRunning, Suspended, GoalReached, TrialsSpent,
//     TooManyFailedTrials, MetricNotReported.
package controller
