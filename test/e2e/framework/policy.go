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

package framework

import "tensorstack.dev/training/pkg/apis/batch/v1beta1"

// FailurePolicy sets the job's failure policy rules.
func (b *JobBuilder) FailurePolicy(rules ...v1beta1.FailurePolicyRule) *JobBuilder {
	b.policy.FailurePolicy = &v1beta1.FailurePolicy{Rules: rules}
	return b
}

// SuccessPolicy sets the job's success policy.
func (b *JobBuilder) SuccessPolicy(p v1beta1.SuccessPolicy) *JobBuilder {
	b.policy.SuccessPolicy = p
	return b
}
