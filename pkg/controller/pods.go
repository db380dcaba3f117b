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
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// claimPods returns the job's pods: those it controls, plus orphans with its
// labels and a replica's name, which it adopts. Pods controlled by anything
// else are left alone.
func (r *reconciler) claimPods(ctx context.Context, finished bool) ([]*corev1.Pod, error) {
	all, err := r.c.podIndexer.ByIndex(podJobIndex, podJobIndexKey(r.key.Namespace, r.kind.Kind(), r.key.Name))
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var owned, orphans []*corev1.Pod
	for _, obj := range all {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		switch {
		case r.jobOwner.Controls(p):
			owned = append(owned, p)
		case !finished && r.jobOwner.Adoptable(p) && r.byName[p.Name] != nil:
			orphans = append(orphans, p)
		case hasOutcomeFinalizer(p) && r.staleOwner(p):
			r.stale = append(r.stale, p)
		}
	}
	if len(orphans) == 0 {
		return owned, nil
	}
	// The cache may still hold a job that was deleted and created again
	// under the same name: ask the apiserver before taking pods over.
	fresh, err := r.kind.getFresh(ctx, r.key.Namespace, r.key.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return owned, nil
		}
		return nil, fmt.Errorf("checking the job before adopting pods: %w", err)
	}
	if fresh.GetUID() != r.job.GetUID() || fresh.GetDeletionTimestamp() != nil {
		return owned, nil
	}
	for _, p := range orphans {
		patch, err := r.jobOwner.AdoptionPatch(p)
		if err != nil {
			return nil, err
		}
		adopted, err := r.c.kubeClient.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				// Gone, or not to be taken over; the next reconcile sees
				// what it became.
				continue
			}
			// A conflict too: the pod changed since the cache saw it (its
			// kubelet wrote its status). Planning on without it would create
			// a pod of its name and record the replica as missing; the
			// reconcile is retried instead, once the cache has caught up.
			return nil, fmt.Errorf("adopting pod %s: %w", p.Name, err)
		}
		r.logger.V(2).Info("Adopted pod", "pod", klog.KObj(adopted))
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonAdopted, "Adopted pod %s", adopted.Name)
		owned = append(owned, adopted)
	}
	return owned, nil
}

// builder is the pod builder with what the reconcile has worked out so
// far: the gang the pods join, the queue's placements, whether the job was
// paused before and whether the startup gates are open.
func (r *reconciler) builder() *podbuilder.Builder {
	b := &podbuilder.Builder{
		Adapter:    r.kind.Adapter,
		Job:        r.job,
		Topology:   r.topo,
		Placements: r.queued.placements,
		Resumed:    r.hasBeenPaused(),
		GatesOpen:  r.gatesOpen,
		AvoidNodes: r.status.SuspectNodeNames(),
		Attempt:    r.status.AttemptCount,

		RecreateOnRestart: r.recreatesOnRestart(),
	}
	b.AttemptReleased = r.releasedAttempt()
	if r.c.gang != nil && r.gang != nil {
		b.Gang = gangJoin{backend: r.c.gang, group: r.gang.Name}
	}
	return b
}

// execute deletes and creates the pods the plan asked for. createErr is why
// pods could not be created, for the job's status; err is every failure,
// to retry.
func (r *reconciler) execute(ctx context.Context) (createErr, err error) {
	var errs []error
	pods := r.podClient()

	if len(r.decided.deletes) > 0 {
		names := make([]string, len(r.decided.deletes))
		for i, d := range r.decided.deletes {
			names[i] = d.pod.Name
		}
		r.c.expectations.ExpectDeletions(r.ekey, names...)
		for _, d := range r.decided.deletes {
			uid := d.pod.UID
			// The UID precondition keeps a delete meant for an old pod off
			// a new one of the same name.
			err := pods.Delete(ctx, d.pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil {
				r.c.expectations.DeletionObserved(r.ekey, d.pod.Name)
				if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
					continue
				}
				r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonFailedDelete, "Error deleting pod %s: %v", d.pod.Name, err)
				errs = append(errs, fmt.Errorf("deleting pod %s: %w", d.pod.Name, err))
				continue
			}
			podsDeleted.WithLabelValues(r.key.Kind).Inc()
			r.logger.V(2).Info("Deleted pod", "pod", klog.KObj(d.pod), "why", d.why)
			r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulDelete, "Deleted pod %s: %s", d.pod.Name, d.why)
		}
	}

	if err := r.openStartupGates(ctx); err != nil {
		errs = append(errs, err)
	}
	if len(r.creates) == 0 {
		return nil, errors.Join(errs...)
	}
	createErr, err = r.createPods(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	return createErr, errors.Join(errs...)
}

// Pods are created in batches of growing size, as Kubernetes' Job
// controller does: one, then two, four and so on, each batch in parallel.
// A job whose pods are all refused (quota, admission) fails one request,
// not hundreds; a healthy one is not held back by round trips made one at a
// time. The cap bounds how many pods are held at once; it is the ReplicaSet controller's burst of 500, so that
// a wide job waits for as few batches as a ReplicaSet of its size (a cap of
// 32 took 1,000 pods 1.55 times as long, make bench-wide).
const (
	createBatchInitial = 1
	createBatchMax     = 500
)

// createPods creates the planned replicas' pods, batch by batch, and stops
// after a batch in which the apiserver refused a pod; that refusal is
// returned first, for the ReplicaFailure condition.
func (r *reconciler) createPods(ctx context.Context) (refused, err error) {
	// One builder for every batch: it computes the environment the
	// replicas share once.
	b := r.builder()
	if err := r.writeConfigMaps(ctx, b); err != nil {
		return nil, err
	}
	names := make([]string, len(r.creates))
	for i, s := range r.creates {
		names[i] = s.name
	}
	r.c.expectations.ExpectCreations(r.ekey, names...)

	var errs []error
	rest := r.creates
	for size := createBatchInitial; len(rest) > 0; size = min(2*size, createBatchMax) {
		batch := rest[:min(size, len(rest))]
		rest = rest[len(batch):]
		results := make([]createResult, len(batch))
		var wg sync.WaitGroup
		for i, s := range batch {
			wg.Go(func() { results[i] = r.createPod(ctx, b, s) })
		}
		wg.Wait()
		stop := false
		for _, res := range results {
			if res.err != nil {
				errs = append(errs, res.err)
				if res.refused && refused == nil {
					refused = res.err
				}
			}
			stop = stop || res.stop
		}
		if stop {
			// What failed one pod (quota, admission, a terminating
			// namespace) most likely fails the others too.
			for _, s := range rest {
				r.c.expectations.CreationObserved(r.ekey, s.name)
			}
			break
		}
	}
	return refused, errors.Join(errs...)
}

// createResult is how creating one pod went: err to report; refused when
// the apiserver refused the pod; stop when the pods not yet created should
// wait for the next reconcile.
type createResult struct {
	err     error
	refused bool
	stop    bool
}

// createPod builds and creates one replica's pod. It is called from
// several goroutines: it reads the reconciler and writes only to its own
// slot (created).
func (r *reconciler) createPod(ctx context.Context, b *podbuilder.Builder, s *slot) createResult {
	pod, err := b.Pod(s.id)
	if err != nil {
		// A spec the controller cannot build a pod from does not get
		// better by retrying; say so and wait for the spec to change.
		r.c.expectations.CreationObserved(r.ekey, s.name)
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonFailedCreate, "Cannot build pod %s: %v", s.name, err)
		r.logger.Error(err, "Cannot build pod", "pod", s.name)
		return createResult{}
	}
	created, err := r.podClient().Create(ctx, pod, metav1.CreateOptions{})
	if err == nil {
		s.created = created
		podsCreated.WithLabelValues(r.key.Kind).Inc()
		r.logger.V(2).Info("Created pod", "pod", klog.KObj(created))
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulCreate, "Created pod %s", pod.Name)
		return createResult{}
	}
	r.c.expectations.CreationObserved(r.ekey, pod.Name)
	switch {
	case apierrors.IsAlreadyExists(err):
		return createResult{err: r.nameTaken(ctx, pod.Name)}
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return createResult{stop: true}
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonFailedCreate, "Error creating pod %s: %v", pod.Name, err)
	return createResult{err: fmt.Errorf("creating pod %s: %w", pod.Name, err), refused: true, stop: true}
}

// nameTaken looks at the pod that holds a replica's name. When it is the
// job's own (the cache is behind), it will show up soon; when it belongs to
// something else, the replica cannot be created until it is gone.
func (r *reconciler) nameTaken(ctx context.Context, name string) error {
	pod, err := r.podClient().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s existed a moment ago; retrying", name)
		}
		return fmt.Errorf("looking at pod %s that holds a replica's name: %w", name, err)
	}
	if r.jobOwner.Controls(pod) {
		return nil
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonNameConflict,
		"Pod %s exists and is not controlled by the job; the replica waits for it to go", name)
	return fmt.Errorf("pod %s exists and is not controlled by the job", name)
}

// ensureService creates the job's Service, or adopts an orphan that carries
// the job's labels. A Service of that name that belongs to something else is
// reported and left alone.
func (r *reconciler) ensureService(ctx context.Context) error {
	_, err := owner.Ensure(ctx, r.jobOwner, owner.Services(r.c.kubeClient, r.c.serviceIndexer, r.key.Namespace,
		"replicas may not find each other"), r.builder().Service())
	return err
}

// openStartupGates releases the planned pods. A pod gone meanwhile needs
// nothing; its replacement is created open.
func (r *reconciler) openStartupGates(ctx context.Context) error {
	if len(r.opens) == 0 {
		return nil
	}
	opened, err := annotatePods(ctx, r.podClient(), r.logger, r.opens, map[string]any{podbuilder.AnnotationStartupGate: podbuilder.StartupGateOpen},
		"opening the startup gate")
	if opened > 0 {
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonLeadersReady,
			"The job's leaders are ready: released %d waiting replica(s)", opened)
	}
	return err
}

// writeConfigMaps writes the job's ConfigMaps before the pods that read
// them are created (a container whose ConfigMap is missing does not
// start): the cluster ConfigMap, the addresses its pods refer to
// (podbuilder.ClusterConfigMapName), and the ConfigMap of its trainer's
// script (podbuilder.ScriptConfigMapName). They are written whenever pods
// are about to be created, so that new pods never read the addresses of an
// earlier shape of the job (an elastic job scaled); an update that changes
// nothing writes nothing to etcd.
//
// The controller may create and update ConfigMaps but neither read nor
// list them (its role, artifacts/deploy): the names hold the job's UID, so
// one that exists already is the job's, or was made for the job by
// someone who could write it anyway; the update makes it the job's again.
func (r *reconciler) writeConfigMaps(ctx context.Context, b *podbuilder.Builder) error {
	cluster, err := b.ClusterConfigMap()
	if err != nil {
		return err
	}
	for _, desired := range []*corev1.ConfigMap{cluster, b.ScriptConfigMap()} {
		if desired == nil {
			continue
		}
		if err := r.writeConfigMap(ctx, desired); err != nil {
			return err
		}
	}
	return nil
}

// writeConfigMap creates the ConfigMap, or updates the one of its name.
func (r *reconciler) writeConfigMap(ctx context.Context, desired *corev1.ConfigMap) error {
	configMaps := r.c.kubeClient.CoreV1().ConfigMaps(r.key.Namespace)
	_, err := configMaps.Create(ctx, desired, metav1.CreateOptions{})
	switch {
	case err == nil:
		r.jobOwner.Normalf(owner.ReasonSuccessfulCreate, "Created config map %s", desired.Name)
		return nil
	case apierrors.IsAlreadyExists(err):
		_, err = configMaps.Update(ctx, desired, metav1.UpdateOptions{})
	}
	switch {
	case err == nil, apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		r.jobOwner.Warningf(owner.ReasonFailedCreate, "Error writing config map %s: %v", desired.Name, err)
		return fmt.Errorf("writing config map %s: %w", desired.Name, err)
	}
}

// ensureSSHKeys gives a job whose kind needs one (MPIJob) its SSH key pair
// Secret, made before the job's first pod: a job with pods has it. The
// controller may only create Secrets, never read, list or change one (its
// role, artifacts/deploy), so a Secret of that name that exists already is
// taken to be the job's, made before a pause or a restart of the
// controller: the name holds the job's UID, which no one knows before the
// job exists (podbuilder.SSHSecretName).
func (r *reconciler) ensureSSHKeys(ctx context.Context) error {
	if !podbuilder.NeedsSSHKeys(r.kind.Adapter) || r.hasPods() {
		return nil
	}
	name := r.topo.SSHSecret
	keys, err := newSSHKeyPair()
	if err != nil {
		return fmt.Errorf("making the job's SSH key pair: %w", err)
	}
	secret := &corev1.Secret{ObjectMeta: r.jobOwner.ObjectMeta(name), Type: corev1.SecretTypeOpaque, Data: keys}
	_, err = r.c.kubeClient.CoreV1().Secrets(r.key.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	switch {
	case err == nil:
		r.jobOwner.Normalf(owner.ReasonSuccessfulCreate, "Created secret %s", name)
		return nil
	case apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		r.jobOwner.Warningf(owner.ReasonFailedCreate, "Error creating secret %s: %v", name, err)
		return fmt.Errorf("creating secret %s: %w", name, err)
	}
}
