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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Reasons of the GangScheduled condition: the whole gang is placed, or the
// controller runs without a gang scheduler (v1beta1.ReasonWaitingForGang
// while pods of the gang wait for room).
const (
	ReasonGangPlaced      = "GangPlaced"
	ReasonNoGangScheduler = "NoGangScheduler"
)

// gangJoin makes pods join a job's group in a backend: what the pod builder
// asks of the gang.
type gangJoin struct {
	backend gang.Backend
	group   string
}

func (j gangJoin) Join(pod *corev1.Pod, member bool) { j.backend.Join(pod, j.group, member) }

// setUpGang watches the objects of the gang backend Options give.
func (c *Controller) setUpGang(logger klog.Logger, opts Options) error {
	c.gang = opts.Gang
	if c.gang == nil {
		return nil
	}
	for _, inf := range c.gang.Informers() {
		if err := c.watchOwned(logger, "the "+c.gang.String()+" objects", inf); err != nil {
			return err
		}
	}
	return nil
}

// desiredGang works out the job's group from the planned replicas; nil when
// the job asks for no gang or has no members.
func (r *reconciler) desiredGang() *gang.Group {
	t9k := podbuilder.T9kScheduler(r.spec)
	if t9k == nil {
		return nil
	}
	g := &gang.Group{Name: r.job.GetName(), Queue: t9k.Queue, Priority: t9k.Priority, PriorityClass: podbuilder.PriorityClassName(t9k.Priority)}
	for _, group := range r.topo.Groups {
		if r.kind.GangMember(group.Type) {
			g.Size += group.Replicas
		}
	}
	if g.Size == 0 {
		return nil
	}
	g.Floor = g.Size
	if e := r.topo.Elastic; e != nil && !e.Reform {
		// An elastic job whose replicas rejoin trains with minReplicas;
		// the rest join as room appears, and torchrun's agents re-form
		// the group with them. One that re-forms at each size needs every
		// replica of its size: each was told the others.
		g.Floor = min(g.Size, e.Min)
	}
	g.MinCount = g.Floor
	for _, s := range r.slots {
		if r.kind.GangMember(s.id.Type) && s.pod != nil && !s.replacing && isTerminated(s.pod) {
			g.MinCount--
		}
	}
	g.MinCount = max(g.MinCount, 1)
	return g
}

// planGang reports, for a job that asks for a gang and is neither paused
// nor finished, whether its whole gang is placed: the GangScheduled
// condition, which it returns. A job that no longer asks for a gang loses
// the condition.
func (r *reconciler) planGang() (d decision) {
	if podbuilder.T9kScheduler(r.spec) == nil {
		meta.RemoveStatusCondition(&r.status.Conditions, v1beta1.ConditionGangScheduled)
		return d
	}
	if r.status.Phase.IsFinished() || pauseEnabled(r.spec) {
		return d
	}
	if r.c.gang == nil {
		d.setCondition(v1beta1.ConditionGangScheduled, metav1.ConditionFalse, ReasonNoGangScheduler,
			"the controller runs without a gang scheduler (--gang-scheduler=none, or auto found neither the "+
				"Workload API nor coscheduling PodGroups): the pods are scheduled one by one")
		return d
	}
	r.gang = r.desiredGang()
	if r.gang == nil {
		return d
	}
	var members, placed int32
	said := ""
	for _, s := range r.slots {
		if !r.kind.GangMember(s.id.Type) {
			continue
		}
		members++
		if s.pod != nil && !s.replacing && s.pod.DeletionTimestamp == nil && isPlaced(s.pod) {
			placed++
			continue
		}
		if said == "" && s.pod != nil {
			said = schedulerMessage(s.pod)
		}
	}
	if placed == members {
		d.setCondition(v1beta1.ConditionGangScheduled, metav1.ConditionTrue, ReasonGangPlaced,
			fmt.Sprintf("all %d pods of the gang are placed (%s)", members, r.c.gang))
		return d
	}
	message := fmt.Sprintf("waiting for room for the whole gang: %d of %d pods placed (%s)", placed, members, r.c.gang)
	if said != "" {
		message += "; the scheduler says: " + said
	}
	d.setCondition(v1beta1.ConditionGangScheduled, metav1.ConditionFalse, v1beta1.ReasonWaitingForGang, message)
	return d
}

// isPlaced says whether the scheduler has given a pod a node (a terminated
// pod had one).
func isPlaced(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" || p.Status.Phase == corev1.PodRunning || isTerminated(p)
}

// schedulerMessage is why the scheduler left a pod unplaced: the message of
// its PodScheduled=False condition, or "".
func schedulerMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// syncGang keeps the group objects before the pods are acted on: for an
// active job that asks for a gang, the group exists first; a finished job's
// group goes with its pods under clean-up policies All and Unfinished and
// stays under None; a paused job keeps its group for the resume; a job that
// no longer asks for a gang loses it. It returns whether pods may be
// created now.
func (r *reconciler) syncGang(ctx context.Context) (bool, error) {
	backend := r.c.gang
	if backend == nil {
		return true, nil
	}
	if r.status.Phase.IsFinished() {
		if policy := cleanUpPolicy(r.spec); policy != v1beta1.CleanUpPolicyNone {
			return false, backend.Remove(ctx, r.jobOwner, fmt.Sprintf("the job finished (clean-up policy %s)", policy))
		}
		return false, nil
	}
	if podbuilder.T9kScheduler(r.spec) == nil {
		return true, backend.Remove(ctx, r.jobOwner, "the job no longer asks for gang scheduling")
	}
	if r.gang == nil {
		return true, nil
	}
	return backend.Ensure(ctx, r.jobOwner, r.gang)
}
