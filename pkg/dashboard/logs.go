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
	"bufio"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

const (
	// logTailLines is how much of a log the page gets before it follows
	// the new lines.
	logTailLines = 1000
	// maxLogLine bounds one line; longer ones are cut, as the kubelet's
	// own log files hold lines of at most 16 KiB anyway.
	maxLogLine = 64 << 10
)

// logLine is one line of a followed log.
type logLine struct {
	Text string `json:"text"`
}

// logs follows one container's log of one of the job's pods (?pod=NAME, and
// ?container=NAME, else its training container) as server-sent events:
// "line" for each line, "end" when the container's log ends, "refused" with
// the API's Status when the user may not read it. The pod must be the
// job's: the page asks for its replicas' logs only.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	podName, container := r.URL.Query().Get("pod"), r.URL.Query().Get("container")
	if podName == "" {
		writeError(w, http.StatusBadRequest, "pod: name the replica's pod")
		return
	}
	pods := t.clients.Kube.CoreV1().Pods(t.namespace)
	stream, err := startEventStream(w)
	if err != nil {
		return
	}
	// From here on errors are events: EventSource cannot read the body of
	// an answer that is not 200.
	refuse := func(err error) { _ = stream.send("refused", errorBody{Status: statusOf(err)}) }
	pod, err := pods.Get(r.Context(), podName, metav1.GetOptions{})
	if err != nil {
		refuse(err)
		return
	}
	if pod.Labels[v1beta1.LabelJobName] != t.name || pod.Labels[v1beta1.LabelJobKind] != t.kind.Name {
		_ = stream.send("refused", errorBody{Status: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
			Reason: metav1.StatusReasonNotFound, Message: "pod " + podName + " is not a replica of " + t.name}})
		return
	}
	if i := v1beta1.TrainingContainer(pod.Spec.Containers, t.kind.TrainingContainer); container == "" && i >= 0 {
		// Named, as kubectl training logs names it, so that a pod with a
		// restart agent beside its training container (restartStrategy
		// InPlace) is still read.
		container = pod.Spec.Containers[i].Name
	}
	tail := int64(logTailLines)
	body, err := pods.GetLogs(podName, &corev1.PodLogOptions{Container: container, Follow: true, TailLines: &tail}).Stream(r.Context())
	if err != nil {
		refuse(err)
		return
	}
	defer body.Close()
	scanner := bufio.NewScanner(body)
	scanner.Buffer(make([]byte, 0, 4096), maxLogLine)
	for scanner.Scan() {
		if err := stream.send("line", logLine{Text: scanner.Text()}); err != nil {
			return
		}
	}
	if err := scanner.Err(); err != nil && r.Context().Err() == nil {
		refuse(err)
		return
	}
	_ = stream.send("end", struct{}{})
}
