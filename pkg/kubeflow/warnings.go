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

package kubeflow

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Warning is one thing in the input that could not be carried over exactly.
type Warning struct {
	Path    string // field path in the Kubeflow input, e.g. "spec.runPolicy.schedulingPolicy.minAvailable"
	Message string // what happened to it
}

// String renders the warning as "<path>: <message>".
func (w Warning) String() string {
	return w.Path + ": " + w.Message
}

// warnings collects the warnings of one conversion, in the order they arise.
type warnings []Warning

func (w *warnings) add(path *field.Path, format string, args ...interface{}) {
	*w = append(*w, Warning{Path: path.String(), Message: fmt.Sprintf(format, args...)})
}

// notCarriedOver reports a field ours has no place for.
func (w *warnings) notCarriedOver(path *field.Path, why string) {
	w.add(path, "not carried over: %s", why)
}
