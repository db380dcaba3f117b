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

package dashboard

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func newNode(name string, ready corev1.ConditionStatus, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: allocatable,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
		},
	}
}

// newJobPod is a pod of a PyTorchTrainingJob on a node, of one container
// with requests.
func newJobPod(namespace, name, job, node string, phase corev1.PodPhase, requests corev1.ResourceList) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "pytorch", Resources: corev1.ResourceRequirements{Requests: requests}},
		}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if job != "" {
		pod.Labels = v1beta1.JobLabels("PyTorchTrainingJob", job)
	}
	return pod
}

func resources(cpu, memory, gpus string) corev1.ResourceList {
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	if gpus != "" {
		list[gpu] = resource.MustParse(gpus)
	}
	return list
}

func forbidden(resource, group string) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "",
			errFromString(`User "viewer" cannot list resource "`+resource+`" in API group "`+group+`" at the cluster scope`))
	}
}

func TestClusterShowsNodesTheirPodsJobsAndSuspects(t *testing.T) {
	suspected := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	job := newPyTorchJob("research", "mnist")
	job.Status.SuspectNodes = []v1beta1.SuspectNode{
		{Name: "gpu-b", Reason: v1beta1.SuspectNodeDeviceFailure, Message: "worker-1: the GPU failed at admission", Time: suspected},
		{Name: "gone", Reason: v1beta1.SuspectNodeLost, Message: "master-0: node lost", Time: suspected},
	}
	f := newFixture(t, job)
	initialized := newJobPod("research", "mnist-worker-0", "mnist", "gpu-a", corev1.PodRunning, resources("2", "4Gi", "2"))
	// An init container asks for more CPU than the containers: the pod
	// holds the larger of the two, as the scheduler counts it.
	initialized.Spec.InitContainers = []corev1.Container{{Name: "fetch", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}
	for _, obj := range []runtime.Object{
		newNode("gpu-b", corev1.ConditionFalse, resources("8", "32Gi", "4")),
		newNode("gpu-a", corev1.ConditionTrue, resources("8", "32Gi", "4")),
		newNode("cpu-only", corev1.ConditionTrue, resources("4", "16Gi", "")),
		initialized,
		newJobPod("research", "mnist-worker-1", "mnist", "gpu-a", corev1.PodRunning, resources("500m", "1Gi", "1")),
		newJobPod("research", "mnist-master-0", "mnist", "gpu-b", corev1.PodPending, resources("1", "2Gi", "1")),
		newJobPod("kube-system", "dns", "", "gpu-a", corev1.PodRunning, resources("100m", "512Mi", "")),
		// A pod of a kind a newer server serves.
		withKind(newJobPod("research", "future-0", "future", "cpu-only", corev1.PodRunning, nil), "NewerTrainingJob"),
		// Terminated and unscheduled pods hold nothing.
		newJobPod("research", "old-master-0", "old", "gpu-a", corev1.PodSucceeded, resources("8", "32Gi", "4")),
		newJobPod("research", "failed-master-0", "failed", "gpu-a", corev1.PodFailed, resources("8", "32Gi", "4")),
		newJobPod("research", "waiting-master-0", "waiting", "", corev1.PodPending, resources("8", "32Gi", "4")),
	} {
		if err := f.kube.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	f.signIn()

	var got clusterView
	f.decode(f.do(http.MethodGet, f.url("/api/cluster"), "", nil), http.StatusOK, &got)
	if want := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, gpu}; !reflect.DeepEqual(got.Resources, want) {
		t.Errorf("resources %v, want %v", got.Resources, want)
	}
	if got.PodsRefused != nil || got.JobsRefused != nil {
		t.Errorf("refusals %+v %+v, want none", got.PodsRefused, got.JobsRefused)
	}
	var names []string
	for _, n := range got.Nodes {
		names = append(names, n.Name)
	}
	if want := []string{"cpu-only", "gpu-a", "gpu-b", "gone"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("nodes %v, want %v: by name, the one gone last", names, want)
	}
	cpuOnly, a, b, gone := got.Nodes[0], got.Nodes[1], got.Nodes[2], got.Nodes[3]

	// gpu-a: the first worker's 3 CPUs (its init container's), the
	// second's 500m and the DNS pod's 100m.
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "3600m/8", corev1.ResourceMemory: "5632Mi/32Gi", gpu: "3/4"} {
		if got := use(a, name); got != want {
			t.Errorf("gpu-a %s: %s, want %s", name, got, want)
		}
	}
	if f := a.Resources[gpu].Fraction; f == nil || *f != 0.75 {
		t.Errorf("gpu-a's GPU fraction %v, want 0.75", f)
	}
	if a.Ready != corev1.ConditionTrue || b.Ready != corev1.ConditionFalse || a.Pods != 3 || b.Pods != 1 {
		t.Errorf("gpu-a %s with %d pods, gpu-b %s with %d; want True with 3, False with 1", a.Ready, a.Pods, b.Ready, b.Pods)
	}
	if want := []nodeJob{{Kind: "PyTorchTrainingJob", Resource: "pytorchtrainingjobs", Namespace: "research", Name: "mnist", Pods: 2}}; !reflect.DeepEqual(a.Jobs, want) {
		t.Errorf("gpu-a's jobs %+v, want %+v", a.Jobs, want)
	}
	// No GPU on the node: nothing allocatable, no fraction.
	if u := cpuOnly.Resources[gpu]; !u.Allocatable.IsZero() || u.Fraction != nil {
		t.Errorf("cpu-only's GPUs %+v, want none and no fraction", u)
	}
	// A kind this dashboard does not know: named, with no link.
	if want := []nodeJob{{Kind: "NewerTrainingJob", Namespace: "research", Name: "future", Pods: 1}}; !reflect.DeepEqual(cpuOnly.Jobs, want) {
		t.Errorf("cpu-only's jobs %+v, want %+v", cpuOnly.Jobs, want)
	}

	wantMark := suspectMark{Kind: "PyTorchTrainingJob", Resource: "pytorchtrainingjobs", Namespace: "research", Job: "mnist",
		Reason: v1beta1.SuspectNodeDeviceFailure, Message: "worker-1: the GPU failed at admission", Time: suspected}
	if len(b.Suspects) == 1 && b.Suspects[0].Time.Equal(&suspected) {
		// JSON gives the time in the local zone.
		b.Suspects[0].Time = suspected
	}
	if len(b.Suspects) != 1 || !reflect.DeepEqual(b.Suspects[0], wantMark) {
		t.Errorf("gpu-b's suspect marks %+v, want %+v", b.Suspects, wantMark)
	}
	if len(a.Suspects) != 0 || a.Suspects == nil {
		t.Errorf("gpu-a's suspect marks %+v, want an empty list", a.Suspects)
	}
	if !gone.Absent || len(gone.Suspects) != 1 || gone.Suspects[0].Reason != v1beta1.SuspectNodeLost {
		t.Errorf("the node gone: %+v, want it absent with its NodeLost mark", gone)
	}

	// The cluster's totals are the nodes' sums.
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "4600m/20", corev1.ResourceMemory: "7680Mi/80Gi", gpu: "4/8"} {
		u := got.Totals[name]
		if got := u.Allocated.String() + "/" + u.Allocatable.String(); got != want {
			t.Errorf("total %s: %s, want %s", name, got, want)
		}
	}
}

// use reads a node's resource as allocated/allocatable.
func use(node nodeView, name corev1.ResourceName) string {
	u := node.Resources[name]
	return u.Allocated.String() + "/" + u.Allocatable.String()
}

func withKind(pod *corev1.Pod, kind string) *corev1.Pod {
	pod.Labels[v1beta1.LabelJobKind] = kind
	return pod
}

// A user who may not list nodes is refused the page with the API's 403,
// as it is.
func TestClusterPassesTheNodesRefusalThrough(t *testing.T) {
	f := newFixture(t)
	f.kube.PrependReactor("list", "nodes", forbidden("nodes", ""))
	f.signIn()
	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/cluster"), "", nil), http.StatusForbidden, &body)
	if body.Status.Reason != metav1.StatusReasonForbidden || !strings.Contains(body.Status.Message, `User "viewer" cannot list resource "nodes"`) {
		t.Errorf("status %+v, want the API's 403 for nodes", body.Status)
	}
}

// Pods and jobs the user may not list across namespaces are left out, with
// the API's refusals; the nodes are still shown.
func TestClusterLeavesOutPodsAndJobsTheUserMayNotList(t *testing.T) {
	job := newPyTorchJob("research", "mnist")
	job.Status.SuspectNodes = []v1beta1.SuspectNode{{Name: "gpu-a", Reason: v1beta1.SuspectNodeEvicted}}
	f := newFixture(t, job)
	if err := f.kube.Tracker().Add(newNode("gpu-a", corev1.ConditionTrue, resources("8", "32Gi", "4"))); err != nil {
		t.Fatal(err)
	}
	f.kube.PrependReactor("list", "pods", forbidden("pods", ""))
	f.training.PrependReactor("list", "tensorflowtrainingjobs", forbidden("tensorflowtrainingjobs", v1beta1.GroupName))
	f.signIn()

	var got clusterView
	f.decode(f.do(http.MethodGet, f.url("/api/cluster"), "", nil), http.StatusOK, &got)
	if got.PodsRefused == nil || got.PodsRefused.Code != http.StatusForbidden || !strings.Contains(got.PodsRefused.Message, `"pods"`) {
		t.Errorf("pods refused: %+v, want the API's 403", got.PodsRefused)
	}
	if len(got.JobsRefused) != 1 || !strings.Contains(got.JobsRefused[0].Message, `"tensorflowtrainingjobs"`) {
		t.Errorf("jobs refused: %+v, want the one 403 for tensorflowtrainingjobs", got.JobsRefused)
	}
	if len(got.Nodes) != 1 || use(got.Nodes[0], gpu) != "0/4" || len(got.Nodes[0].Suspects) != 1 {
		t.Errorf("nodes %+v, want gpu-a with its 4 GPUs and the PyTorch job's mark", got.Nodes)
	}
}

func TestClusterPassesOtherErrorsThrough(t *testing.T) {
	f := newFixture(t)
	f.kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is not answering")
	})
	f.signIn()
	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/cluster"), "", nil), http.StatusServiceUnavailable, &body)
	if !strings.Contains(body.Status.Message, "etcd is not answering") {
		t.Errorf("status %+v, want the API's 503", body.Status)
	}
}

// The pods and jobs are listed with selectors that leave terminated pods,
// unscheduled ones and finished jobs on the API server, in pages.
func TestClusterListsWithSelectorsAndPages(t *testing.T) {
	f := newFixture(t)
	f.signIn()
	f.decode(f.do(http.MethodGet, f.url("/api/cluster"), "", nil), http.StatusOK, nil)
	seen := map[string]metav1.ListOptions{}
	for _, action := range append(f.kube.Actions(), f.training.Actions()...) {
		if list, ok := action.(clienttesting.ListActionImpl); ok {
			seen[list.Resource.Resource] = list.ListOptions
		}
	}
	pods, jobs := seen["pods"], seen["pytorchtrainingjobs"]
	if want := "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"; pods.FieldSelector != want || pods.Limit == 0 {
		t.Errorf("pods listed with %+v, want field selector %q and a limit", pods, want)
	}
	if want := "status.phase!=Succeeded,status.phase!=Failed"; jobs.FieldSelector != want || jobs.Limit == 0 {
		t.Errorf("jobs listed with %+v, want field selector %q and a limit", jobs, want)
	}
	if nodes, ok := seen["nodes"]; !ok || nodes.Limit == 0 {
		t.Errorf("nodes listed with %+v, want a limit", nodes)
	}
}
