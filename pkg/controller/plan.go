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

package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// reconciler is one reconcile of one job.
type reconciler struct {
	c      *Controller
	kind   *kindHandler
	key    jobKey
	ekey   string
	logger klog.Logger
	now    time.Time

	job v1beta1.TrainingJob
	// jobOwner is the job as the owner of objects, reporting to the
	// controller's recorder; it follows job.
	jobOwner *owner.Job
	spec     *v1beta1.TrainingJobSpec
	status   *v1beta1.TrainingJobStatus // the copy's status, edited by the plan
	old      *v1beta1.TrainingJobStatus // the status as read
	topo     *podbuilder.Topology

	slots  []*slot
	byName map[string]*slot
	extra  []*corev1.Pod // owned pods that belong to no replica
	stale  []*corev1.Pod // pods of an earlier job of the same name
	gang   *gang.Group   // the group the pods join, when the job asks for one
	// queued is how the job stands with Kueue (queue.go fills it).
	queued queuePlan

	// satisfied: the caches show every create and delete the controller
	// made for the job, so pods may be created and deleted now.
	satisfied bool
	// cacheBehind (!satisfied): a pod missing from the cache may exist.
	cacheBehind bool
	// firstPods: this reconcile only creates a new job's first pods, and
	// writes its status after them (firstPodsOnly).
	firstPods bool

	// scaleNoted: the Scaled event of this reconcile is recorded.
	scaleNoted bool

	// stop is what a stop that removes running pods decided (stops.go).
	stop stopPlan
	// jobRestartDraining: a whole-job restart waits for old pods to go.
	jobRestartDraining bool
	// stallLogs: the job stalled and acts on it; its pods' last log lines
	// are read into status.stall before the status is written.
	stallLogs bool
	// attemptLogReads are failed replicas whose log tails go into
	// status.attempts before the status is written (attempts.go).
	attemptLogReads []attemptLogRead

	restarts      map[v1beta1.ReplicaType]int32 // replacements decided now, per type
	restartingJob bool                          // a RestartJob decided now
	// inPlace is what an in-place restart decided now (inplace.go).
	inPlace inPlacePlan
	failure string // a replica failure seen now, for ReplicaFailure

	creates []*slot
	// opens are waiting pods to release (startorder_policy.go); gatesOpen says
	// whether pods created now start released.
	opens     []*corev1.Pod
	gatesOpen bool
	// decided is what the plan's steps decided beyond the status: the
	// events, the pod deletes, the next look and the job's own delete, in
	// one value that act applies once.
	decided decision
}

// queuePlan is how a job stands with Kueue in this reconcile.
type queuePlan struct {
	// state is the job's Workload, for a job queued with Kueue while Kueue
	// is usable; nil otherwise. queue is the Queue it was read from.
	state *kueue.State
	queue *kueue.Queue
	// name is the queue the job waits or runs in, when it is queued.
	name string
	// hold, on a queued job, is why it waits regardless of its Workload:
	// Kueue unusable, its queue name required or removed.
	hold *queueHold
	// unqueuedWhy, under --queueing=none, is why a job that names a queue
	// runs unqueued.
	unqueuedWhy string
	// neverQueued: a job that names no queue, which waited only while the
	// controller could not tell whether Kueue would queue it, is not
	// queued after all.
	neverQueued bool
	// stopped: a queued job not admitted has no pods left.
	stopped bool
	// placements are what Kueue's admission asks of each pod set's pods.
	placements map[v1beta1.ReplicaType]*podbuilder.Placement
}

// stopPlan is what stops decided in this reconcile, for act.go to write.
type stopPlan struct {
	// decided, once a stop that removes running pods was decided or held
	// now, is whether it goes ahead (stopRunning); asks are the pods to ask
	// for a checkpoint, unasks those to take a called-off request from,
	// holdResize a resize held for one.
	decided    *bool
	asks       []*corev1.Pod
	unasks     []*corev1.Pod
	holdResize bool
	// resumeLagging are running pods whose resume annotations lag behind
	// the latest checkpoint.
	resumeLagging []*corev1.Pod
}

// inPlacePlan is what an in-place restart decided in this reconcile:
// decided says whether this reconcile decided how the job restarts, bump
// that it restarts in place, waiting that pods wait for the job's attempt
// to be released. attemptAsks are pods to ask for the job's attempt,
// attemptReleases pods to release it to, agentStops pods whose restart
// agent is to exit.
type inPlacePlan struct {
	decided, bump, waiting                   bool
	attemptAsks, attemptReleases, agentStops []*corev1.Pod
}

// attemptLogRead is a failed replica whose log tail is still to be read:
// the attempt's number, the replica's index in its failedReplicas, and the
// container to read (empty: the training container).
type attemptLogRead struct {
	attempt   int32
	index     int
	pod       *corev1.Pod
	container string
}

func (r *reconciler) setJob(job v1beta1.TrainingJob) {
	// Events need the kind, which objects from the cache may lack.
	job.GetObjectKind().SetGroupVersionKind(r.kind.gvk)
	r.job = job
	r.spec = job.CommonSpec()
	r.status = job.JobStatus()
	r.old = r.status.DeepCopy()
	r.jobOwner = &owner.Job{Object: job, Kind: r.kind.Kind(), Recorder: r.c.recorder, Logger: r.logger}
}

func (r *reconciler) metaNow() *metav1.Time {
	t := apiTime(r.now)
	return &t
}

func (r *reconciler) setCondition(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&r.status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: r.job.GetGeneration(),
		LastTransitionTime: *r.metaNow(),
	})
}

// podClient is the client of the job's namespace's pods.
func (r *reconciler) podClient() corev1client.PodInterface {
	return r.c.kubeClient.CoreV1().Pods(r.key.Namespace)
}

// apply adds what a step decided to the plan: its conditions to the status
// copy, where the steps after it read them, and the rest to r.decided.
func (r *reconciler) apply(d decision) {
	for _, c := range d.conditions {
		r.setCondition(c.typ, c.status, c.reason, c.message)
	}
	d.conditions = nil
	r.decided = r.decided.and(d)
}
