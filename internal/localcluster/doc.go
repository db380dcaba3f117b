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

// Package localcluster is the local stack of hack/local-up.sh: a control
// plane on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, the optional second scheduler and Kueue, kwok with fake
// nodes, our apiserver and controller-manager) and, where the machine allows,
// real nodes.
//
// A component is a value (Component): binary, flags, ports, health check, log
// file and what it starts after. Up runs a list of steps (write the PKI and
// configuration, start a component, apply manifests, bring up a node) and
// tears down what it started when one fails, unless asked to retain it; Down
// stops everything in reverse. Every effect on the machine goes through a
// Host, so a dry run prints each command and file instead, and golden tests
// compare that output without root.
//
// The settings a stack was started with, and what it runs, are one typed
// file (state.json), read by Load: the scripts and the tests take them from
// there.
package localcluster
