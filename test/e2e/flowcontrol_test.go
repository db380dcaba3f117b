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

package e2e

import (
	"bufio"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// flowSchema is the API Priority and Fairness schema of
// artifacts/deploy/base/flowcontrol.yaml.
const flowSchema = "training-controller-manager"

// TestControllerHasItsOwnPriorityLevel: the controller sets no client-side
// limit; kube-apiserver puts its requests in the priority level the
// installation gives it (the e2e stack runs it as its ServiceAccount).
func TestControllerHasItsOwnPriorityLevel(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "apf")
	before := dispatchedRequests(t, f)
	ref := f.Create(framework.NewTFJob("apf").WithReplicas("worker", 2))
	f.WaitForRunningPods(ref, 2)
	f.WaitForPhase(ref, v1beta1.JobRunning)
	if after := dispatchedRequests(t, f); after <= before {
		t.Errorf("kube-apiserver dispatched %v requests in flow schema %s before the job and %v after: "+
			"the controller's requests are not classified as installed", before, flowSchema, after)
	}
}

// dispatchedRequests reads from kube-apiserver's metrics how many requests
// it dispatched in flowSchema.
func dispatchedRequests(t *testing.T, f *framework.Framework) float64 {
	t.Helper()
	raw, err := f.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(f.Context())
	if err != nil {
		t.Fatalf("reading kube-apiserver's metrics: %v", err)
	}
	total := 0.0
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_flowcontrol_dispatched_requests_total{") ||
			!strings.Contains(line, `flow_schema="`+flowSchema+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		total += v
	}
	return total
}

// TestFakeNodesDeleteOnlyTerminatingPods: the local stack's kwok, which
// plays the nodes' kubelet, may delete a pod only once it is terminating, as
// a kubelet does (hack/local/kwok-pod-deletes.yaml). Otherwise a delayed
// delete by name would hit a replica's new pod of the same name.
func TestFakeNodesDeleteOnlyTerminatingPods(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kwok-deletes")
	ref := f.Create(framework.NewTFJob("kept").WithReplicas("worker", 1))
	pod := f.WaitForRunningPods(ref, 1)[0]

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(f.Env.LocalDir, "pki", "kwok.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	kwok, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = kwok.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("kwok deleted running pod %s: err %v, want it refused", pod.Name, err)
	}
	if !strings.Contains(err.Error(), "terminating") {
		t.Errorf("refusal %v does not say why", err)
	}
	if _, err := f.Kube.CoreV1().Pods(pod.Namespace).Get(f.Context(), pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("pod %s after kwok's refused delete: %v", pod.Name, err)
	}
}
