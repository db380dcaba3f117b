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

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=tensorstack.dev/training/pkg/apis/batch
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:openapi-model-package=dev.tensorstack.training.pkg.apis.batch.v1beta1
// +groupName=batch.tensorstack.dev

// Package v1beta1 is the v1beta1 version of the batch.tensorstack.dev API: the
// wire and storage format of every job kind (pkg/apis/batch/kinds.go).
package v1beta1
