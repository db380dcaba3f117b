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

package install

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const partOf = "app.kubernetes.io/part-of=tensorstack-training"

// testUninstall follows docs/install.md: the jobs first (their pods and
// Services go with them while the controller runs), then the APIService,
// then everything install.yaml made. Afterwards namespaces delete, no
// APIService is left unavailable, and nothing of ours remains.
func testUninstall(t *testing.T, e *env) {
	start := time.Now()
	e.run(t, nil, "delete", "pytorchtrainingjobs,tensorflowtrainingjobs", "--all", "--all-namespaces", "--wait=true", "--timeout=5m")
	jobsDeleted := time.Since(start)
	e.run(t, nil, "delete", "apiservice", apiServiceName, "--ignore-not-found")
	e.run(t, e.installYAML(t, "b"), "delete", "--ignore-not-found", "--wait=true", "--timeout=5m", "-f", "-")
	t.Logf("uninstalled in %.1fs (deleting the jobs %.1fs, then the installation %.1fs)", time.Since(start).Seconds(),
		jobsDeleted.Seconds(), (time.Since(start) - jobsDeleted).Seconds())

	e.checkNothingLeft(t)
}

// checkNothingLeft: after an uninstall, no APIService of ours, namespaces
// delete, no cluster-wide object of the installation and no volume of its
// etcd remain, and discovery no longer lists the group.
func (e *env) checkNothingLeft(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.dynamic.Resource(apiServices).Get(ctx, apiServiceName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("APIService %s is still there: %v", apiServiceName, err)
	}
	waitFor(t, "namespace "+systemNamespace+" gone", 3*time.Minute, time.Second, e.namespaceGone(systemNamespace))
	// Namespace deletion is not stalled anywhere (an unavailable APIService
	// would stall it in the whole cluster).
	if err := e.kube.CoreV1().Namespaces().Delete(ctx, jobsNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	took := waitFor(t, "namespace "+jobsNamespace+" gone", 2*time.Minute, 500*time.Millisecond, e.namespaceGone(jobsNamespace))
	t.Logf("a namespace deleted after the uninstall went in %.1fs", took.Seconds())

	for _, gvr := range []schema.GroupVersionResource{
		apiServices,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations"},
	} {
		list, err := e.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: partOf})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			t.Errorf("%s %s of the installation is left", gvr.Resource, u.GetName())
		}
	}
	waitFor(t, "the etcd members' PersistentVolumes deleted", 2*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		pvs, err := e.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == systemNamespace {
				return false, nil
			}
		}
		return true, nil
	})
	// Discovery answers without the group, and without errors.
	out := e.run(t, nil, "api-resources")
	if strings.Contains(out, "batch.tensorstack.dev") {
		t.Errorf("kubectl api-resources still lists batch.tensorstack.dev")
	}
}

func (e *env) namespaceGone(name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := e.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}
}
