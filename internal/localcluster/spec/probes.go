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

package spec

// Probe is what a readiness check asks of the machine, as data; the Host
// asks it until it holds.
type Probe interface{ isProbe() }

// GetURL holds on a 2xx answer: over plain HTTP, or HTTPS with CA's
// certificates, without checking them (Insecure), or as the stack's admin.
type GetURL struct {
	URL      string
	CA       string
	Insecure bool
	Admin    bool
}

// Health holds on a 2xx answer of Base's /readyz or /healthz, or when the
// server answers 404 on both (it listens, and has no probe endpoint).
type Health struct{ Base string }

// ConditionTrue holds once the object at the API path has the condition
// True.
type ConditionTrue struct{ Path, Type string }

// ObjectExists holds once the API path answers.
type ObjectExists struct{ Path string }

// NodesReady holds once Count nodes with the label selector are Ready.
type NodesReady struct {
	Selector string
	Count    int
}

// SocketExists holds once Path is a Unix socket.
type SocketExists struct{ Path string }

// LogContains holds once the file holds any of the strings.
type LogContains struct {
	File string
	Any  []string
}

// CRDsEstablished holds once as many CRDs of Group are Established as the
// manifest file CRDsFile holds.
type CRDsEstablished struct{ Group, CRDsFile string }

// SecretCopied copies the serving certificate of a Secret (tls.crt, tls.key)
// into Dir, a kubelet's work in a pod; it fails while the Secret is empty.
type SecretCopied struct{ Namespace, Name, Dir string }

// ServerDryRun holds once kube-apiserver accepts the manifest in a
// server-side dry run (its webhooks answer).
type ServerDryRun struct{ Manifest string }

// GetInNode holds on a 2xx answer of the URL from inside a node's network
// namespace.
type GetInNode struct{ NetNS, URL string }

// ExecSucceeds holds once the command exits 0, run in the Namespace if set.
type ExecSucceeds struct {
	Command   []string
	Namespace *Namespace
}

// StepsFinished holds once the component's background steps have finished;
// it fails for good when they failed.
type StepsFinished struct{ Component string }

func (GetURL) isProbe()          {}
func (Health) isProbe()          {}
func (ConditionTrue) isProbe()   {}
func (ObjectExists) isProbe()    {}
func (NodesReady) isProbe()      {}
func (SocketExists) isProbe()    {}
func (LogContains) isProbe()     {}
func (CRDsEstablished) isProbe() {}
func (SecretCopied) isProbe()    {}
func (ServerDryRun) isProbe()    {}
func (GetInNode) isProbe()       {}
func (ExecSucceeds) isProbe()    {}
func (StepsFinished) isProbe()   {}
