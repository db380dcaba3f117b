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

package kueue

import (
	"k8s.io/apimachinery/pkg/labels"
)

// Management is Kueue's configuration for jobs that name no queue, which
// the controller applies to its own kinds as Kueue's webhooks do to
// Kueue's: set it as Kueue's Configuration has it.
type Management struct {
	// ManageJobsWithoutQueueName (Kueue's manageJobsWithoutQueueName): a
	// job that names no queue, in a namespace NamespaceSelector picks,
	// waits until it names one.
	ManageJobsWithoutQueueName bool
	// NamespaceSelector (Kueue's managedJobsNamespaceSelector) picks the
	// namespaces where Kueue manages the jobs that name no queue: those
	// ManageJobsWithoutQueueName holds, and those it puts in their
	// namespace's default LocalQueue. Nil picks every namespace.
	NamespaceSelector labels.Selector
}

// DefaultManagedJobsNamespaceSelector is Kueue's default
// managedJobsNamespaceSelector, for a Kueue installed in kueue-system.
const DefaultManagedJobsNamespaceSelector = "kubernetes.io/metadata.name notin (kube-system,kueue-system)"

// Unnamed is what Kueue's configuration makes of a new job that names no
// queue.
type Unnamed int

const (
	// UnnamedRuns: Kueue leaves the job alone; it runs at once.
	UnnamedRuns Unnamed = iota
	// UnnamedInDefaultQueue: the job goes to its namespace's LocalQueue
	// named DefaultLocalQueue.
	UnnamedInDefaultQueue
	// UnnamedNeedsQueue: the job waits until it names a queue.
	UnnamedNeedsQueue
)

// DecideUnnamed says what becomes of a new job that names no queue, in a
// namespace that has, or has not, a default LocalQueue. namespaceLabels
// reads the namespace's labels; it is called only when they matter.
func (m Management) DecideUnnamed(hasDefaultQueue bool, namespaceLabels func() (map[string]string, error)) (Unnamed, error) {
	if !hasDefaultQueue && !m.ManageJobsWithoutQueueName {
		return UnnamedRuns, nil
	}
	if m.NamespaceSelector != nil {
		nsLabels, err := namespaceLabels()
		if err != nil {
			return UnnamedRuns, err
		}
		if !m.NamespaceSelector.Matches(labels.Set(nsLabels)) {
			return UnnamedRuns, nil
		}
	}
	if hasDefaultQueue {
		return UnnamedInDefaultQueue, nil
	}
	return UnnamedNeedsQueue, nil
}
