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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/registry/trainingjob"
)

// kubePods reads pods from kube-apiserver, as the server's own identity:
// the progress subresource checks that a pod-bound token's pod belongs to
// the job it reports on.
type kubePods struct {
	client kubernetes.Interface
}

// Client-side limits of the pod reads. A pod is read once in a while
// (trainingjob's verified-pod cache keeps the answer), but when a few hundred
// jobs start reporting at once each of their pods is read once then; the
// default 5 reads per second would hold the reports back for minutes.
const (
	podReadsQPS   = 100
	podReadsBurst = 200
)

// newKubePods returns nil when the server has no kube-apiserver to ask.
func newKubePods(config *restclient.Config) (trainingjob.PodGetter, error) {
	if config == nil {
		return nil, nil
	}
	config = restclient.CopyConfig(config)
	config.QPS, config.Burst = podReadsQPS, podReadsBurst
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return kubePods{client: client}, nil
}

func (p kubePods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return p.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
