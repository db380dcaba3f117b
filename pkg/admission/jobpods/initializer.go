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

package jobpods

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// wantsDryRunClient is a plugin that sends dry runs to kube-apiserver.
type wantsDryRunClient interface {
	SetDryRunClient(kubernetes.Interface)
}

// initializer hands the plugins their client of kube-apiserver.
type initializer struct {
	client kubernetes.Interface
}

// NewInitializer builds the client of the dry runs from the server's client
// configuration of kube-apiserver, without client-side throttling: the
// server's shared client allows 5 requests a second, which held every job
// create for hundreds of milliseconds behind the dry runs of others.
// kube-apiserver's API Priority and Fairness protects it instead, as it does
// against Kubernetes' own components.
func NewInitializer(config *rest.Config) (admission.PluginInitializer, error) {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = -1, 0
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("the client of the pods' dry runs: %w", err)
	}
	return initializer{client: client}, nil
}

// Initialize gives plugin the client when it wants one.
func (i initializer) Initialize(plugin admission.Interface) {
	if p, ok := plugin.(wantsDryRunClient); ok {
		p.SetDryRunClient(i.client)
	}
}
