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

package cli

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/pkg/version"
)

// Factory gives the commands their namespace and API clients. The plugin
// builds them from kubectl's flags (NewFactory); tests hand in fake clientsets.
type Factory interface {
	// Namespace is the namespace to work in: -n, else the kubeconfig
	// context's, else "default". explicit says whether -n gave it.
	Namespace() (namespace string, explicit bool, err error)
	// TrainingClient talks to batch.tensorstack.dev.
	TrainingClient() (versioned.Interface, error)
	// KubeClient talks to the core API: pods, their logs, events, namespaces.
	KubeClient() (kubernetes.Interface, error)
}

// clients is what a command reaches the cluster with.
type clients struct {
	namespace string
	training  versioned.Interface
	kube      kubernetes.Interface
}

// clients returns the namespace and both clients; making a client sends no
// request, so commands that need only one lose nothing.
func (e *env) clients() (clients, error) {
	namespace, _, err := e.Namespace()
	if err != nil {
		return clients{}, err
	}
	training, err := e.TrainingClient()
	if err != nil {
		return clients{}, err
	}
	kube, err := e.KubeClient()
	if err != nil {
		return clients{}, err
	}
	return clients{namespace: namespace, training: training, kube: kube}, nil
}

// findJob fetches the job arg names in the command's namespace.
func (c clients) findJob(ctx context.Context, arg string) (foundJob, error) {
	return findJob(ctx, c.training, c.namespace, arg)
}

// clientQPS and clientBurst bound the requests the commands and the local
// dashboard send, as kubectl bounds its discovery's.
const (
	clientQPS   = 50
	clientBurst = 100
)

// NewFactory builds clients from the kubeconfig and the flags kubectl has
// (--kubeconfig, --context, --as, -n, ...). Server warnings go to warnings.
func NewFactory(flags *ConnectionFlags, streams genericiooptions.IOStreams) Factory {
	return &configFlagsFactory{flags: flags, streams: streams}
}

type configFlagsFactory struct {
	flags   *ConnectionFlags
	streams genericiooptions.IOStreams

	// The REST config is read once: both clients share it.
	once   sync.Once
	config *rest.Config
	err    error
}

func (f *configFlagsFactory) Namespace() (string, bool, error) {
	return f.flags.Namespace()
}

func (f *configFlagsFactory) restConfig() (*rest.Config, error) {
	f.once.Do(func() {
		f.config, f.err = f.flags.RESTConfig()
		if f.err != nil {
			f.err = fmt.Errorf("reading the kubeconfig: %w", f.err)
			return
		}
		f.config.UserAgent = "kubectl-training/" + version.Get() + " " + rest.DefaultKubernetesUserAgent()
		// client-go's default of 5 requests a second (bursts of 10) made one
		// rate limiter for the whole local dashboard: a comparison of 10
		// jobs, 40 reads, waited 4 s on it. The API server's priority and
		// fairness still bounds what one user may send.
		f.config.QPS, f.config.Burst = clientQPS, clientBurst
		f.config.WarningHandler = rest.NewWarningWriter(f.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	})
	return f.config, f.err
}

func (f *configFlagsFactory) TrainingClient() (versioned.Interface, error) {
	config, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	return versioned.NewForConfig(config)
}

func (f *configFlagsFactory) KubeClient() (kubernetes.Interface, error) {
	config, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}
