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
//     in turn, act) and applies the policies' decisions; plan.go: the
//     state one reconcile observes and plans on (the reconciler, its
//     slots); act.go: carrying the plan out, the only place that writes the
//     status (and the logs it reads first: a stall's tails; the
//     attempts an in-place restart asks of the pods and releases); replicas.go: the replica slots, the pods claimed into them,
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
//     clean-up and TTL), gang.go and queue.go (what the reconcile decides
//     about the gang and the queue), dispatched.go (a job MultiKueue runs
//     elsewhere).
//   - statusderive.go and statuswrites.go: the status, its conditions and
//     how it is written; events.go: the events a plan decides (each reason
//     is defined beside the policy that sets it); pods.go: claiming and
//     creating what the job owns (its pods and Service); sshkeys.go: an
//     MPI job's SSH key pair Secret; clusterconfig.go: the ConfigMap of
//     the addresses the job's pods refer to; podannotations.go:
//     how the controller talks to a running pod (startup gates, checkpoint
//     requests, resume points); logtail.go: the end of a replica's log, kept
//     before its pod goes, and logtailreads.go: those reads, run off the
//     reconcile's path; mountfailures.go: the kubelet's FailedMount
//     events; podoutcome.go: a pod's outcome read from its containers;
//     finalizer.go: the replica-outcome finalizer; expectations.go: what the
//     cache has not shown yet.
//   - controller.go and watch.go: the queues, and what the informers feed
//     them; lanes.go: the main and urgent queues; cachetrim.go: what the
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
//
// Decisions taken where the API contract (the field documentation in
// pkg/apis/batch/v1beta1, as kubectl explain shows it) is silent:
//
//   - Addresses: a replica is <type>-<index>.<job>.<namespace>.svc; with
//     Options.ClusterDomain (flag --cluster-domain, empty by default) it is
//     <type>-<index>.<job>.<namespace>.svc.<domain>. Lists of addresses
//     (TF_CONFIG's cluster, a GenericJob's, an XGBoost job's workers, an
//     MPI hostfile) are in the job's cluster ConfigMap, never in a pod.
//   - TF_CONFIG's cluster lists chief, worker and ps, never evaluator (as in
//     Kubeflow, and as TensorFlow's estimator and multi-worker strategies
//     require); the evaluator gets the same cluster and its own task.
//   - PyTorch ranks: the master replica (type master, else index 0 of the
//     first type with replicas) has rank 0 wherever it is listed; the other
//     types follow in list order.
//   - torchrun: see the PyTorch adapter's Entrypoint (pkg/podbuilder) for the exact command.
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
//   - A pod carries the annotation batch.tensorstack.dev/topology, the
//     replica counts it was built for ("chief:1,worker:3"); pods built for
//     other counts are replaced at once, without counting a restart, so no
//     two pods of a job disagree about the cluster. The apiserver lets the
//     counts change only while the job is paused or has no pods, so this
//     only catches a resume that came before the pause took effect.
//   - Restarts: failures use up backoffLimit; a success replaced under
//     restartPolicy Always, a disruption, an Ignore rule and a debug exit do
//     not. Every replacement counts in the type's restartCount. With
//     ExitCode, a pod that failed without any exit code is retried.
//   - Failure policy (failurerules_policy.go): for a failed pod outside debug
//     mode, the first matching rule of spec.runPolicy.failurePolicy decides
//     (FailJob fails the job with reason PodFailurePolicy; RestartJob
//     replaces every pod, counted once however many replicas failed in that
//     reconcile, all created together after the failed replica's backoff);
//     without a match, a disruption is replaced promptly and otherwise the
//     replica's restartPolicy decides. Rules see the pod's containers,
//     init containers included, its conditions and reasons; for a pod that
//     vanished they see only the exit codes the status recorded.
//   - Restart backoff (backoff_policy.go): a replica whose pod exited (failure,
//     success under Always, debug exit) is created again only after a delay
//     counted from the exit (the latest container finishedAt, else the
//     deletion time, else now): --restart-backoff-base (10 s) doubled for
//     each restart of that replica in a row, at most --restart-backoff-max
//     (6 min). The count is the replica's status restartCount; it starts
//     again when a pod of the replica had run for 10 minutes. Disruptions
//     are replaced at once. While it waits, the replica's status is Deleted
//     with reason BackOff and restartAt, and the job is requeued for that
//     time, not polled. Restarting events say when the new pod starts.
//   - Outcomes (finalizer.go): every replica pod carries the finalizer
//     batch.tensorstack.dev/replica-outcome, removed once the stored status
//     records the pod's UID with a final phase (Succeeded, Failed, or
//     Deleted for a pod being replaced or paused), and from every pod of a
//     finished job, a job being deleted, or a job that is gone. A replica
//     recorded Succeeded is not run again when its pod disappears (except
//     under Always or in debug mode). A pod deleted by someone else while it
//     runs, or one that vanished with its outcome unrecorded (its finalizer
//     stripped, or created before the finalizer existed), counts as a
//     failure with an unknown exit code under the replica's policies: what
//     it would have done cannot be known, and counting it keeps backoffLimit
//     and Never meaningful; an eviction through the Eviction API carries
//     DisruptionTarget and is therefore a disruption, not a failure.
//   - Success policy: Default applies the kind's rule; AllWorkers succeeds
//     once every worker replica has, AnyWorker once one has. Replicas of
//     other types left running are then cleaned up by cleanUpPolicy.
//   - A restart is recorded in the status before the pod is deleted: the
//     replica's entry turns Deleted with the old pod's UID. A failure is
//     thus counted once even if the delete fails or the cache is stale; the
//     new pod is created under the same name once the old one is gone.
//   - Outcome order in one reconcile (reconcile.go): success rule, then
//     deadline, then failures, then the start timeout, then the stall
//     watchdog. On DeadlineExceeded, running pods are deleted whatever the
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
//   - Gang scheduling (spec.scheduler.t9kScheduler; gang.go): the backend is
//     chosen at start-up, flag --gang-scheduler: workload, coscheduling,
//     none, or auto (the Workload API if the cluster serves
//     scheduling.k8s.io/v1beta1 workloads, else coscheduling if it serves
//     scheduling.x-k8s.io/v1alpha1 podgroups, else none). The group objects
//     are named after the job, controlled by it (garbage-collected with it),
//     labelled like its pods and annotated with batch.tensorstack.dev/queue
//     and batch.tensorstack.dev/priority. workload: a Workload (controllerRef
//     the job; one PodGroupTemplate "gang": gang policy with minCount the
//     gang's size, disruptionMode All, the priority's class) and a PodGroup
//     (workloadRef to it, the same policy with the current minCount); members
//     get spec.schedulingGroup.podGroupName. coscheduling: a PodGroup with
//     spec.minMember (scheduleTimeoutSeconds left to the plugin's default);
//     members get the label scheduling.x-k8s.io/pod-group, and every pod of
//     the job spec.schedulerName = --coscheduling-scheduler-name (default
//     scheduler-plugins-scheduler), over its template's.
//   - The group is created, and seen in the cache, before any pod is: the
//     coscheduling plugin refuses a labelled pod whose PodGroup it cannot
//     find, and the Workload API holds it back until the PodGroup shows up.
//   - Members are every replica but TensorFlow evaluators. An evaluator is
//     outside TF_CONFIG's cluster and holds up no one; as a member it would
//     count toward minCount and could be placed instead of a trainer. It is
//     scheduled on its own (by the coscheduling scheduler with that backend).
//   - Elastic PyTorch jobs: minCount is at most elastic.minReplicas.
//     torchrun runs with --nnodes=min:max, so the group trains once min
//     replicas are placed, and the others join as room appears.
//   - minCount is the gang's size less the members that finished for good
//     (terminated, not being replaced): both schedulers count only pods that
//     have not terminated, so a replacement in a job whose other members had
//     finished would otherwise wait forever. A replacement while the others
//     run is admitted as it is: the running members and the new pod make up
//     minCount (Workload API: PreEnqueue counts the group's pods, Permit the
//     placed ones; coscheduling: PreFilter counts the labelled pods, Permit
//     the bound ones plus the new one); the group is neither recreated nor
//     resized. The Workload's template keeps the gang's size and follows
//     changes to the replicas.
//   - Priority (0–100) maps to PriorityClasses shipped in artifacts/deploy:
//     1–25 tensorstack-training-p25, 26–50 -p50, 51–75 -p75, 76–100 -p100,
//     each valued at its bound, preemptionPolicy Never (earlier in the
//     scheduling queue, no evictions); 0 sets none. The class is set on every
//     pod of the job, over a template's (a gang's pods share one priority),
//     with any backend, none included; and as priorityClassName on the
//     Workload's template and the PodGroup: the Priority admission plugin
//     derives spec.priority from it and refuses a PodGroup that sets it. A
//     group's class is immutable: a changed priority reaches new pods only.
//   - Queue: recorded on the group in an annotation (a queue name, a DNS
//     subdomain, may be longer than a label value); with Kueue queueing the
//     job waits for that LocalQueue's admission (package kueue).
//   - Pause deletes the pods and keeps the group; resume creates the pods in
//     it. A finished job's group is deleted under clean-up policies All and
//     Unfinished (none of its pods is scheduled again) and kept under None. A
//     job whose t9kScheduler is removed loses its group and its GangScheduled
//     condition; pods created after join no group. A group object of the
//     job's name that the job does not control keeps the pods from being
//     created (NameConflict event, retried); it is not adopted.
//   - Condition GangScheduled, on a job asking for a gang while it is active
//     and not paused: True, GangPlaced, once every member has a node; False,
//     WaitingForGang, while some wait, with how many are placed and the
//     scheduler's message from a waiting pod's PodScheduled=False condition
//     (kubectl get shows the phase as "Pending (WaitingForGang)"); False,
//     NoGangScheduler, when the controller runs without a backend and the
//     pods are scheduled one by one.
//   - Events (reasons): SuccessfulCreate, SuccessfulDelete, SuccessfulUpdate,
//     FailedCreate, FailedDelete, Restarting, Paused, Resumed, Succeeded,
//     ReplicaFailed, BackoffLimitExceeded, DeadlineExceeded, TTLExpired,
//     Adopted, NameConflict, TooManyReplicas, StatusTooLarge.
package controller
