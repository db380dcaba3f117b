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

package batch

import (
	"slices"
	"strings"
)

// templateKind is how a runtime's template holds one job kind. Each kind
// registers its own where its types are declared (types_<kind>.go), so a
// new kind adds its field to TrainingJobTemplate and no case here.
type templateKind struct {
	// kind is the API kind of the jobs; field the template's field.
	kind, field string
	// spec is the template's spec of the kind, nil when it holds none.
	spec func(*TrainingJobTemplate) *TrainingJobSpec
	// kindSpec is the template's whole spec of the kind (a pointer to the
	// kind's spec type); called only when spec is not nil.
	kindSpec func(*TrainingJobTemplate) any
	// canonicalize rewrites the accepted spellings of that spec, as a job
	// of the kind is rewritten when it is stored.
	canonicalize func(*TrainingJobTemplate)
}

var templateKinds []templateKind

// orderedTemplateKinds are the registered kinds by their field's name: the
// order in which a template's kinds are named, whatever order the kinds'
// files registered them in.
func orderedTemplateKinds() []templateKind {
	out := slices.Clone(templateKinds)
	slices.SortFunc(out, func(a, b templateKind) int { return strings.Compare(a.field, b.field) })
	return out
}

// TemplateKinds are the template's fields by the job kind each makes.
func TemplateKinds() map[string]string {
	out := make(map[string]string, len(templateKinds))
	for _, k := range templateKinds {
		out[k.kind] = k.field
	}
	return out
}

// Kinds names the job kinds whose spec the template holds, in the order of
// their fields' names: one, for a valid runtime.
func (t *TrainingJobTemplate) Kinds() []string {
	var out []string
	for _, k := range orderedTemplateKinds() {
		if k.spec(t) != nil {
			out = append(out, k.kind)
		}
	}
	return out
}

// Kind names the job kind the template makes: the first it holds, "" when
// it holds none.
func (t *TrainingJobTemplate) Kind() string {
	if kinds := t.Kinds(); len(kinds) > 0 {
		return kinds[0]
	}
	return ""
}

// CommonSpec is the part of the template's spec every kind shares, of the
// first kind it holds; nil when it holds none.
func (t *TrainingJobTemplate) CommonSpec() *TrainingJobSpec {
	for _, k := range orderedTemplateKinds() {
		if spec := k.spec(t); spec != nil {
			return spec
		}
	}
	return nil
}

// KindSpec is the whole spec of the first kind the template holds (a
// *PyTorchTrainingJobSpec, ...); nil when it holds none.
func (t *TrainingJobTemplate) KindSpec() any {
	for _, k := range orderedTemplateKinds() {
		if k.spec(t) != nil {
			return k.kindSpec(t)
		}
	}
	return nil
}

// Image is the image of the first container of the template's first
// replica type: the one a list of runtimes shows. "" when there is none.
func (t *TrainingJobTemplate) Image() string {
	spec := t.CommonSpec()
	if spec == nil || len(spec.ReplicaSpecs) == 0 || len(spec.ReplicaSpecs[0].Template.Spec.Containers) == 0 {
		return ""
	}
	return spec.ReplicaSpecs[0].Template.Spec.Containers[0].Image
}

// Canonicalize rewrites the accepted spellings of every spec the template
// holds.
func (t *TrainingJobTemplate) Canonicalize() {
	for _, k := range templateKinds {
		if k.spec(t) != nil {
			k.canonicalize(t)
		}
	}
}
