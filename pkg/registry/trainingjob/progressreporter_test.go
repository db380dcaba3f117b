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

package trainingjob

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// fakePods is a PodGetter over a map of "namespace/name" to pods.
type fakePods struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	err   error // returned by every call when set
	calls int
}

func (f *fakePods) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	pod, ok := f.pods[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return pod.DeepCopy(), nil
}

const (
	reporterJobUID   = types.UID("job-uid")
	reporterOtherUID = types.UID("other-job-uid")
)

func reporterJob() *batch.PyTorchTrainingJob {
	return &batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: reporterJobUID}}
}

// jobPod is a pod of namespace ns controlled by the job of the given name
// and UID, or by nothing when jobName is empty.
func jobPod(name string, uid types.UID, jobName string, jobUID types.UID) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}}
	if jobName != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "batch.tensorstack.dev/v1beta1", Kind: "PyTorchTrainingJob",
			Name: jobName, UID: jobUID, Controller: ptr.To(true),
		}}
	}
	return pod
}

// withUser is a request context of the given user; podName and podUID,
// when not empty, are the extras of a pod-bound service-account token.
func withUser(name, podName, podUID string) context.Context {
	extra := map[string][]string{}
	if podName != "" {
		extra[serviceaccount.PodNameKey] = []string{podName}
	}
	if podUID != "" {
		extra[serviceaccount.PodUIDKey] = []string{podUID}
	}
	return genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name, Extra: extra})
}

const nsDefaultSA = "system:serviceaccount:ns:default"

func TestReporter(t *testing.T) {
	notOwned := jobPod("stray", "stray-uid", "", "")
	// An owner that is not the controller does not make the pod the job's.
	notOwned.OwnerReferences = []metav1.OwnerReference{{Kind: "PyTorchTrainingJob", Name: "train", UID: reporterJobUID}}
	pods := map[string]*corev1.Pod{
		"ns/train-master-0": jobPod("train-master-0", "pod-uid", "train", reporterJobUID),
		"ns/other-master-0": jobPod("other-master-0", "other-pod-uid", "other", reporterOtherUID),
		"ns/stray":          notOwned,
		"ns/bare":           jobPod("bare", "bare-uid", "", ""),
	}
	cases := []struct {
		name        string
		ctx         context.Context
		pods        PodGetter // nil for fakePods over pods
		noPods      bool      // a server without a PodGetter
		want        string
		wantStatus  int32 // 0 for success
		wantMessage []string
	}{
		{name: "a user without pod extras", ctx: withUser("alice", "", ""), want: "alice"},
		// Every service account passes RBAC (artifacts/deploy binds them
		// all): one whose token is bound to no pod is refused.
		{name: "a service account without pod extras", ctx: withUser(nsDefaultSA, "", ""),
			wantStatus: 403, wantMessage: []string{"only with a token bound to one of the job's pods"}},
		{name: "a service account of another namespace without pod extras", ctx: withUser("system:serviceaccount:other:ci", "", ""),
			wantStatus: 403, wantMessage: []string{"only with a token bound to one of the job's pods"}},
		{name: "the job's own pod", ctx: withUser(nsDefaultSA, "train-master-0", "pod-uid"), want: "train-master-0"},
		{name: "the pod of another job", ctx: withUser(nsDefaultSA, "other-master-0", "other-pod-uid"),
			wantStatus: 403, wantMessage: []string{"other-master-0", "PyTorchTrainingJob other", "not to this job"}},
		{name: "a pod that no longer exists", ctx: withUser(nsDefaultSA, "gone", "gone-uid"),
			wantStatus: 403, wantMessage: []string{"pod gone no longer exists"}},
		{name: "a pod whose uid changed", ctx: withUser(nsDefaultSA, "train-master-0", "older-pod-uid"),
			wantStatus: 403, wantMessage: []string{"train-master-0", "older-pod-uid"}},
		{name: "a pod without controller", ctx: withUser(nsDefaultSA, "bare", "bare-uid"),
			wantStatus: 403, wantMessage: []string{"pod bare is not controlled by a job"}},
		{name: "a pod owned but not controlled by the job", ctx: withUser(nsDefaultSA, "stray", "stray-uid"),
			wantStatus: 403, wantMessage: []string{"pod stray is not controlled by a job"}},
		{name: "a service account of another namespace", ctx: withUser("system:serviceaccount:other:default", "train-master-0", "pod-uid"),
			wantStatus: 403, wantMessage: []string{"not in the job's namespace"}},
		{name: "a user with pod extras that is not a service account", ctx: withUser("alice", "train-master-0", "pod-uid"),
			wantStatus: 403, wantMessage: []string{"not in the job's namespace"}},
		{name: "a pod name without pod uid", ctx: withUser(nsDefaultSA, "train-master-0", ""),
			wantStatus: 403, wantMessage: []string{"without both its name and uid"}},
		{name: "a pod uid without pod name", ctx: withUser(nsDefaultSA, "", "pod-uid"),
			wantStatus: 403, wantMessage: []string{"without both its name and uid"}},
		{name: "two pod names", ctx: genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: nsDefaultSA, Extra: map[string][]string{
			serviceaccount.PodNameKey: {"train-master-0", "other-master-0"}, serviceaccount.PodUIDKey: {"pod-uid"},
		}}), wantStatus: 403, wantMessage: []string{"without both its name and uid"}},
		// Only a server without authentication has no user; its
		// authorization let the report through.
		{name: "no user", ctx: context.Background(), want: ""},
		{name: "no pod getter", ctx: withUser(nsDefaultSA, "train-master-0", "pod-uid"), noPods: true,
			wantStatus: 403, wantMessage: []string{"no access to pods"}},
		{name: "the pod getter fails", ctx: withUser(nsDefaultSA, "train-master-0", "pod-uid"),
			pods: &fakePods{err: errors.New("connection refused")}, wantStatus: 503, wantMessage: []string{"connection refused"}},
		{name: "the pod getter is forbidden", ctx: withUser(nsDefaultSA, "train-master-0", "pod-uid"),
			pods: &fakePods{err: apierrors.NewForbidden(corev1.Resource("pods"), "train-master-0", errors.New("no RBAC"))}, wantStatus: 503},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var getter PodGetter = &fakePods{pods: pods}
			switch {
			case tc.noPods:
				getter = nil
			case tc.pods != nil:
				getter = tc.pods
			}
			check := newReporterCheck(getter, batch.Resource("pytorchtrainingjobs"), "progress")
			got, err := check.reporter(tc.ctx, reporterJob())
			if tc.wantStatus == 0 {
				if err != nil || got != tc.want {
					t.Fatalf("reporter = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if got != "" {
				t.Errorf("reporter = %q along with an error, want none", got)
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != tc.wantStatus {
				t.Fatalf("error = %v, want a %d", err, tc.wantStatus)
			}
			switch tc.wantStatus {
			case 403:
				if !apierrors.IsForbidden(err) {
					t.Errorf("error %v is not Forbidden", err)
				}
				details := status.Status().Details
				if details == nil || details.Group != "batch.tensorstack.dev" || details.Kind != "pytorchtrainingjobs/progress" || details.Name != "train" {
					t.Errorf("details = %+v, want pytorchtrainingjobs/progress train of batch.tensorstack.dev", details)
				}
			case 503:
				if !apierrors.IsServiceUnavailable(err) {
					t.Errorf("error %v is not ServiceUnavailable", err)
				}
			}
			for _, want := range tc.wantMessage {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not name %q", err.Error(), want)
				}
			}
		})
	}
}

func TestReporterRemembersVerifiedPods(t *testing.T) {
	pods := &fakePods{pods: map[string]*corev1.Pod{
		"ns/train-master-0": jobPod("train-master-0", "pod-uid", "train", reporterJobUID),
	}}
	check := newReporterCheck(pods, batch.Resource("pytorchtrainingjobs"), "progress")
	ctx := withUser(nsDefaultSA, "train-master-0", "pod-uid")
	for i := range 3 {
		if got, err := check.reporter(ctx, reporterJob()); err != nil || got != "train-master-0" {
			t.Fatalf("call %d: reporter = %q, %v; want train-master-0", i, got, err)
		}
	}
	if pods.calls != 1 {
		t.Errorf("%d pod reads for three reports of one pod, want 1", pods.calls)
	}

	// The memory is of the pod's job: a report of the same pod to another
	// job reads the pod again and is refused.
	other := reporterJob()
	other.Name, other.UID = "other", reporterOtherUID
	if _, err := check.reporter(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("a report to another job: error = %v, want Forbidden", err)
	}
	if pods.calls != 2 {
		t.Errorf("%d pod reads, want 2", pods.calls)
	}
	// A pod refused is not remembered as verified.
	if _, err := check.reporter(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("a second report to another job: error = %v, want Forbidden", err)
	}
	if pods.calls != 3 {
		t.Errorf("%d pod reads, want 3", pods.calls)
	}
	// The remembered pod still needs the job's namespace.
	if _, err := check.reporter(withUser("system:serviceaccount:other:default", "train-master-0", "pod-uid"), reporterJob()); !apierrors.IsForbidden(err) {
		t.Errorf("a remembered pod from another namespace: error = %v, want Forbidden", err)
	}
}

// TestReporterNode: a pod's report carries the node the pod runs on, read
// with the pod the first time and from the check's memory after.
func TestReporterNode(t *testing.T) {
	pod := jobPod("train-master-0", "pod-uid", "train", reporterJobUID)
	pod.Spec.NodeName = "node-a"
	pods := &fakePods{pods: map[string]*corev1.Pod{"ns/train-master-0": pod}}
	check := newReporterCheck(pods, batch.Resource("pytorchtrainingjobs"), "checkpoint")
	for i := range 2 {
		info, err := check.reporterInfo(withUser(nsDefaultSA, "train-master-0", "pod-uid"), reporterJob())
		if err != nil || info.node != "node-a" || info.name != "train-master-0" {
			t.Fatalf("report %d: %+v, %v; want pod train-master-0 on node-a", i, info, err)
		}
	}
	if pods.calls != 1 {
		t.Errorf("%d reads of the pod, want 1", pods.calls)
	}
}
