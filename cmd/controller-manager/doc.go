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

// Command training-controller-manager runs the controller of the training
// jobs of every kind (package
// tensorstack.dev/training/pkg/controller) and the controller of the
// hyperparameter searches (tensorstack.dev/training/pkg/controller/tuning),
// with leader election, Prometheus metrics and health probes.
//
// RBAC: these are all the API calls the binary makes; grant exactly these.
// RESOURCE is each kind's resource (pkg/apis/batch.Kinds);
// artifacts/deploy/base/rbac-controller-manager.yaml grants them.
//
//	group                   resource                          verbs
//	batch.tensorstack.dev   RESOURCE                          get, list, watch, create, delete
//	batch.tensorstack.dev   RESOURCE/status                   patch
//	batch.tensorstack.dev   RESOURCE/finalizers               update
//	batch.tensorstack.dev   RESOURCE/pause                    create
//	batch.tensorstack.dev   RESOURCE/resume                   create
//	batch.tensorstack.dev   tuningjobs                        list, watch
//	batch.tensorstack.dev   tuningjobs/status                 update
//	batch.tensorstack.dev   clustertrainingruntimes           get
//	batch.tensorstack.dev   trainingruntimes                  get
//	""                      pods                              get, list, watch, create, delete, patch
//	""                      pods/log                          get
//	""                      services                          get, list, watch, create, delete, patch
//	""                      secrets                           create
//	""                      configmaps                        create, update
//	apps                    deployments                       list, watch, create, update, delete
//	""                      events                            list, watch, create, patch
//	""                      nodes                             list, watch
//	coordination.k8s.io     leases                            get, create, update
//	scheduling.k8s.io       workloads                         list, watch, create, patch, delete
//	scheduling.k8s.io       podgroups                         list, watch, create, patch, delete
//	scheduling.x-k8s.io     podgroups                         list, watch, create, patch, delete
//	kueue.x-k8s.io          workloads                         list, watch, create, patch
//	kueue.x-k8s.io          workloads/status                  update
//	kueue.x-k8s.io          localqueues                       list, watch
//	""                      namespaces                        get
//	kueue.x-k8s.io          resourceflavors                   get
//	kueue.x-k8s.io          workloadpriorityclasses           get
//	authentication.k8s.io   tokenreviews                      create
//	authorization.k8s.io    subjectaccessreviews              create
//
// artifacts/deploy grants exactly these (rbacdoc_test.go keeps the two
// equal): the base ClusterRole, the leader-election Role, the Kueue
// component's ClusterRole and system:auth-delegator.
//
// What each is for: jobs get (a fresh read before adopting orphans, and of a
// finished job, which is not cached), list and watch (informer, unfinished
// jobs only; at start, a paged list of the finished jobs with a TTL), delete
// (ttlSecondsAfterFinished); status patch (the controller writes what
// changed, as a merge patch); finalizers update (its owner references block
// the job's deletion, which the OwnerReferencesPermissionEnforcement
// admission plugin checks; no request uses it directly); create, pause and
// resume are a search's: its trials are jobs it makes, and pauses and
// resumes as its early stopping decides. Searches: list and watch feed the
// search controller's informer; it writes their status whole (update),
// recording each trial before it creates the trial's job. Runtimes: a trial
// made from one is created only if the controller may get it (the
// training-apiserver asks kube-apiserver; no request uses it directly). Pods and
// services: list and watch (informers, restricted by the label selector
// batch.tensorstack.dev/job-name), create, delete (restarts, pause, clean-up,
// TensorBoard removal), patch (adopting labelled orphans, opening startup gates,
// asking for a checkpoint and naming the latest one), get (finding out who
// holds a name when a create says AlreadyExists). Pod logs: a stalled
// job's last lines, kept in its status. Deployments:
// TensorBoard. Events: the event recorder (core/v1 events) creates events
// and patches them when it aggregates repeats; list and watch feed the
// informer that finds a pod's FailedMount events. Leases: leader election, in the
// --leader-elect-namespace only (a Role is enough there). Gang scheduling
// (--gang-scheduler): scheduling.k8s.io workloads and podgroups with the
// workload backend, scheduling.x-k8s.io podgroups with coscheduling; list and
// watch (informers, by the job-name label), create (a job's group), patch (a
// changed minimum count: a member finished for good, or the replicas
// changed; workloads only for the latter), delete (clean-up policies All and
// Unfinished). Which backend runs is decided from discovery, which every
// authenticated user may read. Kueue (--queueing, components/kueue): a job's
// Workload (list, watch, create, patch; its status to clear an eviction's
// admission as Kueue's jobframework does), the LocalQueues (whether a
// namespace has a default one), a namespace's labels (Kueue's
// managedJobsNamespaceSelector), the node labels and tolerations of the
// ResourceFlavors an admission assigns, and the priority of a
// WorkloadPriorityClass. Whether Kueue is served, and these granted, is
// asked again every --queueing-recheck-period.
// Token and access reviews: the metrics
// endpoint asks who sent a scrape and whether they may read it
// (metricsserver.go), as the ClusterRole system:auth-delegator allows.
package main
