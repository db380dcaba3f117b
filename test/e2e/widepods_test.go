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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/test/e2e/framework"
)

// The most a pod of a job at the replica cap may take, and any one value
// in it: a pod that grew with the job would pass both.
const (
	widePodMaxBytes   = 32 * 1024
	widePodValueBytes = 16 * 1024
)

// TestEveryKindAtTheReplicaCapMakesSmallPods: a job of every kind at the
// replica cap, with a 40-character name in a 50-character namespace, gets
// every one of its pods on the simulated nodes, each at most 32 KiB as the
// API returns it, with no variable or argument over 16 KiB: the replicas'
// addresses are in the job's cluster ConfigMap, which the job owns.
//
// The pods are never scheduled: only their making is tested, and 1,000
// pods placed on the simulated nodes slowed the scheduling of other tests'
// pods past Kueue's PodsReady timeout. For the same reason it runs alone,
// on make test-chaos's stack of kwok nodes (a whole make test-e2e leaves it
// out), and the kinds run one after the other, each job deleted before the
// next.
func TestEveryKindAtTheReplicaCapMakesSmallPods(t *testing.T) {
	prefix := "wide-pods-" + strings.Repeat("x", 30) // e2e-<prefix>-xxxxx: 50 characters
	f := framework.New(t, prefix)
	if len(f.Namespace) != 50 {
		t.Fatalf("namespace %s has %d characters, want 50", f.Namespace, len(f.Namespace))
	}
	const workers = batch.MaxTotalReplicas - 1
	for _, tc := range []struct {
		job    *framework.JobBuilder
		config bool // whether the kind publishes addresses
	}{
		{framework.NewTFJob(name40("tf")).WithReplicas("chief", 1).WithReplicas("worker", workers), true},
		{framework.NewPyTorchJob(name40("pt")).WithReplicas("master", 1).WithReplicas("worker", workers), false},
		{framework.NewXGBoostJob(name40("xgb")).WithReplicas("master", 1).WithReplicas("worker", workers), true},
		{framework.NewGenericJob(name40("gen")).WithReplicas("coordinator", 1).WithReplicas("worker", workers), true},
		{framework.NewMPIJob(name40("mpi")).WithReplicas("launcher", 1).WithReplicas("worker", workers), true},
	} {
		t.Run(string(tc.job.Kind()), func(t *testing.T) {
			f := f.For(t)
			start := time.Now()
			ref := f.Create(tc.job.UnscheduledPods())
			pods := f.WaitForPods(ref, fmt.Sprintf("%d pods", batch.MaxTotalReplicas), 5*time.Minute, func(pods []corev1.Pod) (bool, error) {
				return len(pods) == batch.MaxTotalReplicas, nil
			})
			t.Logf("%s: %d pods exist %.1fs after the create", ref, len(pods), time.Since(start).Seconds())
			largest, total := 0, 0
			for i := range pods {
				raw, err := json.Marshal(&pods[i])
				if err != nil {
					t.Fatal(err)
				}
				largest, total = max(largest, len(raw)), total+len(raw)
				if len(raw) > widePodMaxBytes {
					t.Errorf("pod %s is %d bytes, over %d", pods[i].Name, len(raw), widePodMaxBytes)
				}
				for _, c := range slices.Concat(pods[i].Spec.InitContainers, pods[i].Spec.Containers) {
					for _, s := range slices.Concat(c.Command, c.Args) {
						if len(s) > widePodValueBytes {
							t.Errorf("pod %s: container %s has an argument of %d bytes", pods[i].Name, c.Name, len(s))
						}
					}
					for _, e := range c.Env {
						if len(e.Value) > widePodValueBytes {
							t.Errorf("pod %s: container %s has %s of %d bytes", pods[i].Name, c.Name, e.Name, len(e.Value))
						}
					}
				}
			}
			t.Logf("%s: largest pod %d bytes, all pods %d bytes", ref, largest, total)
			configMaps, err := f.Kube.CoreV1().ConfigMaps(f.Namespace).List(f.Context(),
				metav1.ListOptions{LabelSelector: framework.JobSelector(ref)})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !tc.config && len(configMaps.Items) != 0:
				t.Errorf("%s published %d config maps, want none", ref, len(configMaps.Items))
			case tc.config && len(configMaps.Items) != 1:
				t.Errorf("%s has %d config maps, want its cluster config map", ref, len(configMaps.Items))
			case tc.config:
				cm := &configMaps.Items[0]
				size := 0
				for _, v := range cm.Data {
					size += len(v)
				}
				job := f.MustGetJob(ref)
				if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != job.GetUID() {
					t.Errorf("config map %s is controlled by %v, want %s", cm.Name, owner, ref)
				}
				if !strings.Contains(strings.Join(mapValues(cm.Data), "\n"), "worker-998."+ref.Name+"."+f.Namespace+".svc") {
					t.Errorf("config map %s does not list the last worker", cm.Name)
				}
				t.Logf("%s: config map %s holds %d bytes", ref, cm.Name, size)
			}
			if err := f.DeleteJob(f.Context(), ref); err != nil {
				t.Fatal(err)
			}
			f.WaitForNoPods(ref, 5*time.Minute)
		})
	}
}

// name40 is a job name of 40 characters starting with prefix.
func name40(prefix string) string {
	return prefix + "-" + strings.Repeat("w", 39-len(prefix))
}

func mapValues(m map[string]string) []string {
	values := make([]string, 0, len(m))
	for _, v := range m {
		values = append(values, v)
	}
	return values
}
