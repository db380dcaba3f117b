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

package apiserver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// waitForServingCert waits until the serving certificate and key files
// exist and are not empty, for at most timeout. An installation whose
// certificate the controller-manager makes starts the apiserver pods with
// the Secret still empty; the kubelet fills the mounted files once it is
// written, and waiting for them beats a crash loop whose back-off would
// delay the start by minutes.
func waitForServingCert(ctx context.Context, certFile, keyFile string, timeout, interval time.Duration) error {
	if certFile == "" || keyFile == "" {
		return nil
	}
	return waitForFiles(ctx, "the serving certificate", []string{certFile, keyFile}, timeout, interval)
}

// waitForEtcdCerts waits, as waitForServingCert, for the client
// certificate, key and CA that --etcd-certfile, --etcd-keyfile and
// --etcd-cafile name: the controller-manager writes them too.
func waitForEtcdCerts(ctx context.Context, files []string, timeout, interval time.Duration) error {
	var named []string
	for _, f := range files {
		if f != "" {
			named = append(named, f)
		}
	}
	if len(named) == 0 {
		return nil
	}
	return waitForFiles(ctx, "the etcd client certificate", named, timeout, interval)
}

// waitForFiles waits until every file exists and is not empty, for at most
// timeout (none when it is not positive).
func waitForFiles(ctx context.Context, what string, files []string, timeout, interval time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	present := func(path string) bool {
		info, err := os.Stat(path)
		return err == nil && info.Size() > 0
	}
	logged := false
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		missing = missing[:0]
		for _, f := range files {
			if !present(f) {
				missing = append(missing, f)
			}
		}
		if len(missing) == 0 {
			return true, nil
		}
		if !logged {
			klog.InfoS("Waiting for "+what, "files", files, "timeout", timeout)
			logged = true
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s (%s) was not there within %v (--tls-cert-wait): "+
			"with generated certificates the controller-manager writes it into the Secret the pod mounts; "+
			"check its log and events: %w", what, strings.Join(missing, ", "), timeout, err)
	}
	return nil
}
