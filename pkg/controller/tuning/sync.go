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

package tuning

import (
	"context"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// sync brings one search a step on: it observes the trials' jobs, plans
// the next status, stores it, and only then acts on the jobs, so that a
// trial is always recorded before its job is created.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	search, err := c.searches.TuningJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its trials go with it: they are owned by it
	}
	if err != nil {
		return err
	}
	if search.DeletionTimestamp != nil {
		return nil
	}
	observed := map[string]observation{}
	for _, informer := range c.trials {
		jobs, err := informer.GetIndexer().ByIndex(searchIndex, key)
		if err != nil {
			return err
		}
		for _, obj := range jobs {
			if job, ok := obj.(v1beta1.TrainingJob); ok {
				observed[job.GetName()] = observe(search, job)
			}
		}
	}
	status, actions, events, err := plan(search, seedOf(search), observed, metav1.NewTime(c.clock.Now()))
	if err != nil {
		c.recorder.Event(eventObject(search), corev1.EventTypeWarning, "InvalidSearch", err.Error())
		return nil // a validated search cannot get here; retrying will not help
	}
	if !apiequality.Semantic.DeepEqual(status, &search.Status) {
		changed := search.DeepCopy()
		changed.Status = *status
		if search, err = c.client.BatchV1beta1().TuningJobs(namespace).UpdateStatus(ctx, changed, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing the status: %w", err)
		}
	}
	for _, e := range events {
		c.recorder.Event(eventObject(search), e.eventType, e.reason, e.message)
	}
	return c.act(ctx, search, actions)
}

// act creates, pauses and resumes trials' jobs, as the stored status asks.
func (c *Controller) act(ctx context.Context, search *v1beta1.TuningJob, actions []action) error {
	logger := klog.FromContext(ctx)
	var errs []error
	for _, a := range actions {
		var trial *v1beta1.TrialStatus
		for i := range search.Status.Trials {
			if search.Status.Trials[i].Name == a.trial {
				trial = &search.Status.Trials[i]
			}
		}
		if trial == nil {
			continue
		}
		job, kind, err := trialJob(search, trial)
		if err != nil {
			errs = append(errs, fmt.Errorf("trial %s: %w", a.trial, err))
			continue
		}
		client := kind.Client(c.client, search.Namespace)
		switch a.kind {
		case actCreate:
			_, err = client.Create(ctx, job, metav1.CreateOptions{})
			switch {
			case apierrors.IsAlreadyExists(err):
				// Created before a restart, or seen late by the cache; or
				// someone else's job has the trial's name.
				err = nil
				if existing, getErr := client.Get(ctx, a.trial); getErr == nil {
					if owner := metav1.GetControllerOf(existing); owner == nil || owner.UID != search.UID {
						err = c.failTrial(ctx, search, trial.Name, "a job of the trial's name exists that the search does not own")
					}
				}
			case err == nil:
				c.recorder.Eventf(eventObject(search), corev1.EventTypeNormal, ReasonTrialCreated, "Created trial %s (%s)", trial.Name, describe(trial))
			case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
				// The template makes a job the API refuses (a runtime
				// that is gone, a value out of a field's range): the
				// trial fails, the search goes on.
				c.recorder.Eventf(eventObject(search), corev1.EventTypeWarning, ReasonTrialFailed, "Trial %s could not be created: %v", trial.Name, err)
				err = c.failTrial(ctx, search, trial.Name, fmt.Sprintf("its job could not be created: %v", err))
			}
		case actPause:
			_, err = client.Pause(ctx, a.trial, metav1.CreateOptions{})
		case actResume:
			_, err = client.Resume(ctx, a.trial, metav1.CreateOptions{})
		}
		if apierrors.IsConflict(err) {
			err = nil // the job finished meanwhile; the next sync sees it
		}
		if err != nil {
			logger.V(2).Info("Acting on a trial failed", "search", klog.KObj(search), "trial", a.trial, "action", a.kind, "err", err)
			errs = append(errs, fmt.Errorf("%s trial %s: %w", a.kind, a.trial, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// eventObject is the reference events of a search are recorded on: the
// search's kind is not in the recorder's scheme, and objects from the
// cache or a client carry no kind of their own.
func eventObject(search *v1beta1.TuningJob) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "TuningJob",
		Namespace: search.Namespace, Name: search.Name, UID: search.UID, ResourceVersion: search.ResourceVersion,
	}
}

// failTrial records that a trial's job could not be made.
func (c *Controller) failTrial(ctx context.Context, search *v1beta1.TuningJob, trial, message string) error {
	changed := search.DeepCopy()
	for i := range changed.Status.Trials {
		if t := &changed.Status.Trials[i]; t.Name == trial {
			t.State, t.Message = v1beta1.TrialFailed, message
		}
	}
	_, err := c.client.BatchV1beta1().TuningJobs(search.Namespace).UpdateStatus(ctx, changed, metav1.UpdateOptions{})
	return err
}

// describe writes a trial's parameter values.
func describe(t *v1beta1.TrialStatus) string {
	s := ""
	for i, p := range t.Parameters {
		if i > 0 {
			s += ", "
		}
		s += p.Name + "=" + p.Value
	}
	return s
}

// seedOf is the search's seed: the spec's, or the one it recorded, or one
// made from its UID, so that it stays the same across restarts.
func seedOf(search *v1beta1.TuningJob) int64 {
	switch {
	case search.Spec.Algorithm.Seed != nil:
		return *search.Spec.Algorithm.Seed
	case search.Status.Seed != nil:
		return *search.Status.Seed
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(search.UID))
	return int64(h.Sum64() >> 1)
}
