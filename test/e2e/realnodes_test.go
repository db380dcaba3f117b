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
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/internal/skips"
	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// The tests of this file need two real nodes or more (internal/localcluster:
// LOCAL_REAL_NODES), each with its own containerd, kubelet, network
// namespace and pod CIDR, routed to the others; real-node is in rack
// real-rack-0, real-node2 in real-rack-1.
const (
	realRackLabel = "topology.tensorstack.dev/rack"
	realNodeLabel = "tensorstack.dev/node"
)

// onRealNodes is onRealNode for a test that needs n real nodes.
func onRealNodes(t *testing.T, prefix string, n int) *framework.Framework {
	t.Helper()
	f := onRealNode(t, prefix)
	if f.Env.RealNodes < n {
		skips.Test(t, "test-e2e", fmt.Sprintf("the stack runs %d real nodes, the test needs %d (LOCAL_REAL_NODES)",
			f.Env.RealNodes, n), skips.RequireRealNodes)
	}
	return f
}

// TestRealNodesDDPAcrossNodes: the DDP example's two ranks, spread over two
// nodes, meet through the job's Service DNS name and train: the traffic of
// every all-reduce crosses from one node's pod CIDR to the other's. The job
// names no rendezvous, so its ranks meet through the static one.
func TestRealNodesDDPAcrossNodes(t *testing.T) {
	f := onRealNodes(t, "real-ddp-nodes", 2)
	applyJob(f, framework.NewPyTorchJob("spread").WithReplicas("node", 2).
		Torchrun(v1beta1.TorchrunConfig{ProcPerNode: "1"}).CleanUp(v1beta1.CleanUpPolicyNone).SpreadOverNodes().
		Image(framework.TrainingImage).Command("python3", "pytorch_ddp.py").Env("STEPS", "20").Env("STEP_SECONDS", "0.2").
		Requests("250m", "512Mi").CPULimit("1").MemoryLimit("2Gi"))
	ref := f.Ref(framework.KindPyTorch, "spread")
	waitSucceeded(f, ref)
	pods := f.Pods(ref)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	checkOnRealNode(t, pods)
	checkStaticRendezvous(t, ref, pods)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("both ranks ran on %s, want one per node", pods[0].Spec.NodeName)
	}
	// Each node gives its pods addresses of its own /24.
	subnet := func(ip string) string {
		parsed := net.ParseIP(ip).To4()
		if parsed == nil {
			t.Fatalf("pod IP %q is not IPv4", ip)
		}
		return parsed.Mask(net.CIDRMask(24, 32)).String()
	}
	if a, b := subnet(pods[0].Status.PodIP), subnet(pods[1].Status.PodIP); a == b {
		t.Errorf("both pods' addresses are in %s/24, want one pod CIDR per node", a)
	}
	// The ranks find each other by the Service's name, which resolves on
	// either node to the rank-0 pod's address.
	var endpoint string
	for _, c := range pods[0].Spec.Containers {
		for _, e := range append(c.Env, corev1.EnvVar{Name: "args", Value: strings.Join(c.Args, " ")}) {
			if strings.Contains(e.Value, "spread") && (e.Name == "MASTER_ADDR" || e.Name == "PET_RDZV_ENDPOINT" || strings.Contains(e.Value, "rdzv")) {
				endpoint = e.Value
			}
		}
	}
	if endpoint == "" {
		t.Errorf("no rendezvous endpoint names the job's Service in pod %s", pods[0].Name)
	}
	for _, p := range pods {
		out := podLog(f, p.Name)
		if !strings.Contains(out, "world=2") || !strings.Contains(out, "step=20") {
			t.Errorf("pod %s on %s did not train with a world of 2 to step 20:\n%s", p.Name, p.Spec.NodeName, out)
		}
	}
	t.Logf("ranks on %s (%s) and %s (%s), rendezvous %q", pods[0].Spec.NodeName, pods[0].Status.PodIP,
		pods[1].Spec.NodeName, pods[1].Status.PodIP, endpoint)
}

// TestRealNodesKubeletLost: one node's kubelet stops. A job on the other
// node keeps training and succeeds meanwhile; the lost node's pod is
// evicted once its toleration of the unreachable node runs out, and, when the
// administrator declares the node out of service, replaced on the node that
// is left, without a restart counted against backoffLimit.
func TestRealNodesKubeletLost(t *testing.T) {
	f := onRealNodes(t, "real-nodes-lost", 2)
	ctx := f.Context()
	nodes := realNodeNames(t, f)
	lostNode, keptNode := nodes[0], nodes[1]
	cm := applyLossJob(f, lostNode)
	lost := f.Ref(framework.KindPyTorch, "lost")
	first := waitStarted(f, lost)[0]
	if first.Spec.NodeName != lostNode {
		t.Fatalf("the job to lose runs on %s, want %s", first.Spec.NodeName, lostNode)
	}
	applyJob(f, framework.NewPyTorchJob("kept").WithReplicas("master", 1).NodeSelector(corev1.LabelHostname, keptNode).
		Image(framework.TrainingImage).Requests("20m", "32Mi").
		Command("python3", "-c", "import time\nfor i in range(1, 31):\n    print(f'step={i}', flush=True)\n    time.sleep(1)"))
	kept := f.Ref(framework.KindPyTorch, "kept")
	waitStarted(f, kept)
	// The replacement runs briefly.
	cm.Data["seconds"] = "3"
	if _, err := f.Kube.CoreV1().ConfigMaps(f.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	loss := loseNode(f, lostNode)

	// The other node's job trains on and succeeds while the node is lost.
	waitSucceeded(f, kept)
	if out := podLog(f, f.Pods(kept)[0].Name); !strings.Contains(out, "step=30") {
		t.Errorf("the job on %s did not reach step 30:\n%s", keptNode, out)
	}
	t.Logf("the job on %s succeeded %s after %s's kubelet stopped", keptNode, time.Since(loss.stopped).Round(time.Second), lostNode)

	waitEvicted(f, first)
	loss.outOfService()
	replaced := f.WaitForPods(lost, "a replacement", 2*time.Minute, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 1 && pods[0].UID != first.UID && pods[0].Spec.NodeName != "", nil
	})
	if node := replaced[0].Spec.NodeName; node != keptNode {
		t.Errorf("the replacement runs on %s, want %s, the node that is left", node, keptNode)
	}
	// It finishes there, with the lost node still down.
	waitSucceeded(f, lost)
	if n := f.MustGetJob(lost).JobStatus().BackoffCount; n != 0 {
		t.Errorf("backoffCount %d after the node was lost, want 0: a disruption is not the program's failure", n)
	}
	t.Logf("the lost node's job succeeded on %s, %s after its kubelet stopped", keptNode, time.Since(loss.stopped).Round(time.Second))

	loss.back()
}

// TestRealNodesRackPinned: Kueue's topology-aware scheduling over the real
// nodes' racks. A job that requires one rack runs with every pod in one
// rack; a job too large for any rack stays queued with Kueue's topology
// reason, though the two racks together would hold it.
func TestRealNodesRackPinned(t *testing.T) {
	f := onRealNodes(t, "real-rack", 2)
	if !f.KueueServed() {
		t.Skip("the stack runs no Kueue")
	}
	kc := f.Kueue().KueueV1beta2()
	topology := &kueuev1beta2.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace},
		Spec: kueuev1beta2.TopologySpec{Levels: []kueuev1beta2.TopologyLevel{
			{NodeLabel: realRackLabel}, {NodeLabel: corev1.LabelHostname},
		}},
	}
	if _, err := kc.Topologies().Create(f.Context(), topology, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kc.Topologies().Delete(context.Background(), topology.Name, metav1.DeleteOptions{}) })
	f.NewKueueQueueWithFlavor(&kueuev1beta2.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace},
		Spec: kueuev1beta2.ResourceFlavorSpec{
			NodeLabels:   map[string]string{realNodeLabel: "real"},
			Tolerations:  []corev1.Toleration{{Key: "tensorstack.dev/real-node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TopologyName: ptr.To(kueuev1beta2.TopologyReference(topology.Name)),
		},
	}, 0, "racks")
	job := func(name, cpu string) *framework.JobBuilder {
		return framework.NewPyTorchJob(name).Label(batch.QueueLabel, "racks").
			Annotate(batch.AnnotationRequiredTopology, realRackLabel).WithReplicas("worker", 2).
			Image(framework.TrainingImage).Command("sleep", "3").Requests(cpu, "32Mi").
			SuccessPolicy(v1beta1.SuccessPolicyAllWorkers)
	}
	// Two pods of 1100m fit in no rack of one two-CPU node.
	applyJob(f, job("toolarge", "1100m"))
	applyJob(f, job("pinned", "600m"))
	pinned := f.Ref(framework.KindPyTorch, "pinned")
	pods := f.WaitForPods(pinned, "both pods bound", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 2 && pods[0].Spec.NodeName != "" && pods[1].Spec.NodeName != "", nil
	})
	racks := map[string]bool{}
	for _, p := range pods {
		node, err := f.Kube.CoreV1().Nodes().Get(f.Context(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		racks[node.Labels[realRackLabel]] = true
	}
	if len(racks) != 1 {
		t.Errorf("the pinned job's pods are in racks %v, want one", racks)
	}
	waitSucceeded(f, pinned)
	checkOnRealNode(t, f.Pods(pinned))

	tooLarge := f.Ref(framework.KindPyTorch, "toolarge")
	f.WaitForJob(tooLarge, "queued with Kueue's topology reason", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "topology"), nil
	})
	if pods := f.Pods(tooLarge); len(pods) != 0 {
		t.Errorf("the job too large for a rack has %d pods, want none", len(pods))
	}
	t.Logf("pinned job in rack %v; the larger one queued", racks)
}

// realNodeNames lists the real nodes, by name.
func realNodeNames(t *testing.T, f *framework.Framework) []string {
	t.Helper()
	nodes, err := f.Kube.CoreV1().Nodes().List(f.Context(), metav1.ListOptions{LabelSelector: realNodeLabel + "=real"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if len(names) < 2 {
		t.Fatalf("real nodes %v, want two or more", names)
	}
	return names
}
