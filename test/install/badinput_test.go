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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// testBadInput: what a platform team gets wrong shows as an event that
// names it, as docs/install.md's troubleshooting says: an image reference
// the registry does not have, and a cluster without a default
// StorageClass. Then the broken installation uninstalls as any other.
func testBadInput(t *testing.T, e *env) {
	ctx := context.Background()
	e.run(t, nil, "annotate", "storageclass", "local-path", defaultClassAnnotation+"=false", "--overwrite")
	defer e.run(t, nil, "annotate", "storageclass", "local-path", defaultClassAnnotation+"=true", "--overwrite")

	digests := e.releaseDigests(t, "b")
	wrong := "sha256:" + strings.Repeat("0", 64)
	manifest := strings.ReplaceAll(string(e.installYAML(t, "b")), digests["training-controller-manager"], wrong)
	wrongImage := e.registry + "/tensorstack/training-controller-manager:v0.0.0-install.b@" + wrong
	if !strings.Contains(manifest, wrongImage) {
		t.Fatalf("install.yaml of release b does not name %s once its digest is replaced", wrongImage)
	}
	e.run(t, []byte(manifest), "apply", "--server-side", "-f", "-")

	for _, want := range []struct{ what, kind, reason, message string }{
		{"the image that cannot be pulled", "Pod", "Failed", wrongImage},
		{"the etcd volume without a StorageClass", "PersistentVolumeClaim", "FailedBinding", "no storage class is set"},
	} {
		took := waitFor(t, "an event naming "+want.what, 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
			events, err := e.kube.CoreV1().Events(systemNamespace).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=" + want.kind + ",reason=" + want.reason})
			if err != nil {
				return false, nil
			}
			for _, ev := range events.Items {
				if strings.Contains(ev.Message, want.message) {
					t.Logf("%s: %s %s: %s", want.what, ev.InvolvedObject.Name, ev.Reason, ev.Message)
					return true, nil
				}
			}
			return false, nil
		})
		t.Logf("%s named by an event %.1fs after apply", want.what, took.Seconds())
	}
	if ok, why := e.apiServiceAvailable(ctx); ok {
		t.Errorf("the APIService is Available with no etcd volume: %s", why)
	} else {
		t.Logf("APIService not Available: %s", why)
	}

	e.run(t, nil, "delete", "apiservice", apiServiceName, "--ignore-not-found")
	e.run(t, []byte(manifest), "delete", "--ignore-not-found", "--wait=true", "--timeout=5m", "-f", "-")
	e.checkNothingLeft(t)
}
