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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ReasonFailedMount is the kubelet's event reason for a volume it cannot
// mount: a missing Secret or ConfigMap, a claim that is not bound. The pod's
// status only says ContainerCreating then, so the job's conditions take the
// reason and message from the event.
const ReasonFailedMount = "FailedMount"

// mountFailureWindow is how old the last FailedMount event of a pod may be
// and still explain why it is stuck. The kubelet retries a failing mount
// with a backoff that reaches about two minutes and reports each failure;
// an older event belongs to a mount that has since worked.
const mountFailureWindow = 3 * time.Minute

// mountFailureIndex indexes the events by the UID of the pod they are about.
const mountFailureIndex = "pod-uid"

// mountFailures keeps the kubelet's FailedMount events about pods. The watch
// asks only for that reason, so its cost follows the pods that cannot mount,
// not the cluster's event rate.
type mountFailures struct {
	informer cache.SharedIndexInformer
}

func newMountFailures(client kubernetes.Interface) (*mountFailures, error) {
	inf := coreinformers.NewFilteredEventInformer(client, metav1.NamespaceAll, 0,
		cache.Indexers{mountFailureIndex: func(obj any) ([]string, error) {
			if e, ok := obj.(*corev1.Event); ok && e.InvolvedObject.UID != "" {
				return []string{string(e.InvolvedObject.UID)}, nil
			}
			return nil, nil
		}},
		func(o *metav1.ListOptions) { o.FieldSelector = "involvedObject.kind=Pod,reason=" + ReasonFailedMount })
	if err := inf.SetTransform(trimForCache); err != nil {
		return nil, err
	}
	return &mountFailures{informer: inf}, nil
}

// onChange calls queue with the namespace and name of the pod an event is
// about, whenever one arrives or repeats.
func (m *mountFailures) onChange(logger klog.Logger, queue func(namespace, name string)) error {
	handle := func(obj any) {
		if e, ok := obj.(*corev1.Event); ok {
			logger.V(5).Info("Mount failure reported", "pod", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name))
			queue(e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		}
	}
	_, err := m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, cur any) { handle(cur) },
	})
	return err
}

// recent returns the message of the pod's latest FailedMount event, when
// one was reported within mountFailureWindow of now.
func (m *mountFailures) recent(p *corev1.Pod, now time.Time) (string, bool) {
	if m == nil || p.UID == "" {
		return "", false
	}
	objs, err := m.informer.GetIndexer().ByIndex(mountFailureIndex, string(p.UID))
	if err != nil {
		return "", false
	}
	var latest *corev1.Event
	var latestAt time.Time
	for _, o := range objs {
		e, ok := o.(*corev1.Event)
		if !ok {
			continue
		}
		if at := eventTime(e); latest == nil || at.After(latestAt) {
			latest, latestAt = e, at
		}
	}
	if latest == nil || now.Sub(latestAt) > mountFailureWindow {
		return "", false
	}
	return latest.Message, true
}

// eventTime is when an event was last reported: the legacy recorders (the
// kubelet's among them) set lastTimestamp, events.k8s.io recorders
// eventTime and the series.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
