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

import (
	"fmt"
	"sort"
	"strings"
)

// Step is one thing a component does on the machine, as data: the Host
// carries it out, or, in a dry run, prints it.
type Step interface {
	fmt.Stringer
	isStep()
}

// Log is a progress line.
type Log struct{ Text string }

// Apply applies manifest files with kubectl as the stack's admin;
// ServerSide for objects over the size limit of the last-applied
// annotation (Kueue's Workload CRD).
type Apply struct {
	Files      []string
	ServerSide bool
}

// ApplyTemplate fills the @KEY@ placeholders of a template of hack/local
// and applies the result.
type ApplyTemplate struct {
	Template string
	Values   map[string]string
}

// WritePKI issues the stack's certificates, keys and kubeconfigs into Dir,
// in order (a certificate's CA comes first).
type WritePKI struct {
	Dir   string
	Items []PKIItem
}

// WriteConfigs writes every configuration file of the stack into Dir: they
// are rendered from the settings, hack/local and the pinned modules.
type WriteConfigs struct{ Dir string }

// Exec runs a command to completion.
type Exec struct{ Command []string }

// SaveSysctls records the machine's values of the sysctls the kubelet
// changes, so the last stack to stop puts them back.
type SaveSysctls struct{ Names []string }

// HoldMountNamespace starts the process that holds a node's private mount
// namespace and mounts the node's own /var/lib, /var/log and /run in it.
type HoldMountNamespace struct{ Node Node }

// MakeCgroups makes the kubelet's cgroup root in every cgroup v1 hierarchy.
type MakeCgroups struct{ Cgroup string }

// OpenImageStore keeps a node's image store if the last stop marked it clean
// and starts it afresh otherwise.
type OpenImageStore struct{ Node Node }

// ImportImages imports image archives into a node's containerd, skipping
// those its store holds as they are now; an Optional archive is imported
// only when it was built. In the Background, the component goes on at once
// and its StepsFinished check waits for the import.
type ImportImages struct {
	Node       Node
	Archives   []string
	Optional   []string
	Background bool
}

// KillCgroupTasks kills every process in a node's cgroups.
type KillCgroupTasks struct{ Cgroup string }

// CleanContainers removes a node's containers from its image store and marks
// the store clean.
type CleanContainers struct{ Node Node }

// TeardownNodes stops every real node of the stack (also those a crashed
// run left) and removes their processes, namespaces and cgroups, and puts
// back the sysctls.
type TeardownNodes struct{ Sysctls []string }

// StartMultiKueueWorker starts the MultiKueue worker stack beside this one
// and connects Kueue to it.
type StartMultiKueueWorker struct{ Dir string }

// StopMultiKueueWorker stops the worker stack, if one runs.
type StopMultiKueueWorker struct{ Dir string }

func (Log) isStep()                   {}
func (StopMultiKueueWorker) isStep()  {}
func (Apply) isStep()                 {}
func (ApplyTemplate) isStep()         {}
func (WritePKI) isStep()              {}
func (WriteConfigs) isStep()          {}
func (Exec) isStep()                  {}
func (SaveSysctls) isStep()           {}
func (HoldMountNamespace) isStep()    {}
func (MakeCgroups) isStep()           {}
func (OpenImageStore) isStep()        {}
func (ImportImages) isStep()          {}
func (KillCgroupTasks) isStep()       {}
func (CleanContainers) isStep()       {}
func (TeardownNodes) isStep()         {}
func (StartMultiKueueWorker) isStep() {}

func (s Log) String() string { return "log: " + s.Text }

func (s Apply) String() string {
	how := "apply"
	if s.ServerSide {
		how = "apply --server-side"
	}
	return how + " " + strings.Join(s.Files, " ")
}

func (s ApplyTemplate) String() string {
	keys := make([]string, 0, len(s.Values))
	for k := range s.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "apply the template " + s.Template + " filled with " + strings.Join(keys, " ")
}

func (s WritePKI) String() string {
	names := make([]string, len(s.Items))
	for i, item := range s.Items {
		names[i] = item.String()
	}
	return "write the PKI into " + s.Dir + ": " + strings.Join(names, ", ")
}

func (s WriteConfigs) String() string { return "write the configuration files into " + s.Dir }
func (s Exec) String() string         { return "exec " + strings.Join(s.Command, " ") }
func (s SaveSysctls) String() string  { return "save the sysctls " + strings.Join(s.Names, " ") }
func (s HoldMountNamespace) String() string {
	return "hold the mount namespace of " + s.Node.Name + " (overlays on /var/lib and /var/log, /run from " + s.Node.Path("run") + ")"
}
func (s MakeCgroups) String() string { return "make the cgroup " + s.Cgroup + " in every hierarchy" }
func (s OpenImageStore) String() string {
	return "open the image store of " + s.Node.Name + " at " + s.Node.StoreRoot()
}
func (s ImportImages) String() string {
	when := ""
	if s.Background {
		when = " in the background"
	}
	optional := ""
	if len(s.Optional) > 0 {
		optional = " (when built: " + strings.Join(s.Optional, " ") + ")"
	}
	return "import " + strings.Join(s.Archives, " ") + optional + " into " + s.Node.Name + when
}
func (s KillCgroupTasks) String() string { return "kill every process in the cgroup " + s.Cgroup }
func (s CleanContainers) String() string {
	return "remove the containers of " + s.Node.Name + " and mark its image store clean"
}
func (s TeardownNodes) String() string {
	return "tear down the real nodes: their processes, cgroups and namespaces; restore " + strings.Join(s.Sysctls, " ")
}
func (s StopMultiKueueWorker) String() string { return "stop the MultiKueue worker stack in " + s.Dir }
func (s StartMultiKueueWorker) String() string {
	return "start the MultiKueue worker stack in " + s.Dir + " and connect Kueue to it"
}

// PKIItem is one thing WritePKI issues.
type PKIItem interface {
	fmt.Stringer
	isPKIItem()
}

// CA is a self-signed certificate authority, Name.crt and Name.key.
type CA struct{ Name, CommonName string }

// Cert is a certificate of a CA (a server's when Server, else a client's),
// Name.crt and Name.key.
type Cert struct {
	CA, Name   string
	Orgs       []string
	CommonName string
	Server     bool
	SANs       []string
}

// Kubeconfig is a client certificate of the cluster CA for User in Orgs,
// written into File with the server's address.
type Kubeconfig struct {
	File, Server, Name string
	Orgs               []string
	User               string
}

// KeyPair is a key pair, Name.key and Name.pub (the service accounts').
type KeyPair struct{ Name string }

func (CA) isPKIItem()         {}
func (Cert) isPKIItem()       {}
func (Kubeconfig) isPKIItem() {}
func (KeyPair) isPKIItem()    {}

func (i CA) String() string         { return "CA " + i.Name }
func (i Cert) String() string       { return "certificate " + i.Name + " of " + i.CA }
func (i Kubeconfig) String() string { return "kubeconfig of " + i.User }
func (i KeyPair) String() string    { return "key pair " + i.Name }
