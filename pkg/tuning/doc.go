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

// Package tuning is the arithmetic of a hyperparameter search, apart from
// Kubernetes: the space of parameter values and the algorithms that choose
// from it (random, grid, tpe), the early stopping rules (asha and the
// median rule), and a trial's objective curve. The search controller
// (pkg/controller/tuning) feeds it the trials' results and acts on its
// answers.
package tuning
