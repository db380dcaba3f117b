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

package v1beta1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Convert_v1beta1_DebugMode_To_batch_DebugMode folds the deprecated enable
// field into enabled, by batch.ModeEnabled.
func Convert_v1beta1_DebugMode_To_batch_DebugMode(in *DebugMode, out *batch.DebugMode, s conversion.Scope) error {
	if err := autoConvert_v1beta1_DebugMode_To_batch_DebugMode(in, out, s); err != nil {
		return err
	}
	out.Enabled = batch.ModeEnabled(in.Enabled, in.Enable)
	return nil
}

// Convert_v1beta1_PauseMode_To_batch_PauseMode folds the deprecated enable
// field into enabled, by batch.ModeEnabled.
func Convert_v1beta1_PauseMode_To_batch_PauseMode(in *PauseMode, out *batch.PauseMode, s conversion.Scope) error {
	if err := autoConvert_v1beta1_PauseMode_To_batch_PauseMode(in, out, s); err != nil {
		return err
	}
	out.Enabled = batch.ModeEnabled(in.Enabled, in.Enable)
	return nil
}
