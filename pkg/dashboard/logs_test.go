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
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func replicaPod(namespace, name, job string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
		v1beta1.LabelJobName: job, v1beta1.LabelJobKind: "PyTorchTrainingJob",
	}}}
}

func TestLogsFollowsAReplicasLog(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	if err := f.kube.Tracker().Add(replicaPod("team", "mnist-master-0", "mnist")); err != nil {
		t.Fatal(err)
	}
	f.signIn()
	events := f.openStream("/api/namespaces/team/pytorchtrainingjobs/mnist/logs?pod=mnist-master-0&container=pytorch")

	// The fake API's log of every container is this one line.
	line := next(t, events, "line", "refused")
	var got logLine
	if err := json.Unmarshal([]byte(line.data), &got); err != nil || line.name != "line" || got.Text != "fake logs" {
		t.Errorf("event %s %s, want the line \"fake logs\"", line.name, line.data)
	}
	next(t, events, "end")
}

func TestLogsRefusesAPodOfAnotherJob(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	if err := f.kube.Tracker().Add(replicaPod("team", "other-master-0", "other")); err != nil {
		t.Fatal(err)
	}
	f.signIn()
	events := f.openStream("/api/namespaces/team/pytorchtrainingjobs/mnist/logs?pod=other-master-0")

	var body errorBody
	if err := json.Unmarshal([]byte(next(t, events, "refused", "line").data), &body); err != nil {
		t.Fatal(err)
	}
	if body.Status.Code != http.StatusNotFound {
		t.Errorf("refused with %+v, want 404: the pod is not the job's", body.Status)
	}
}

// TestLogsPicksTheTrainingContainer: without ?container, the log read is the
// training container's, as kubectl training logs reads it, so that a pod
// with a restart agent beside its training container is still read.
func TestLogsPicksTheTrainingContainer(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	pod := replicaPod("team", "mnist-master-0", "mnist")
	pod.Spec.Containers = []corev1.Container{{Name: "sidecar"}, {Name: "pytorch"}, {Name: "tensorstack-restart-agent"}}
	if err := f.kube.Tracker().Add(pod); err != nil {
		t.Fatal(err)
	}
	f.signIn()
	events := f.openStream("/api/namespaces/team/pytorchtrainingjobs/mnist/logs?pod=mnist-master-0")
	next(t, events, "line", "refused")
	read := ""
	for _, a := range f.kube.Actions() {
		if g, ok := a.(k8stesting.GenericAction); ok && a.GetSubresource() == "log" {
			if opts, ok := g.GetValue().(*corev1.PodLogOptions); ok {
				read = opts.Container
			}
		}
	}
	if read != "pytorch" {
		t.Errorf("read the log of container %q, want pytorch", read)
	}
}
