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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// replicaKind is what converting one kind's map of replica specs needs to know.
type replicaKind struct {
	// kind is the Kubeflow kind, for messages.
	kind string
	// specsField is the field of spec that holds the map.
	specsField string
	// types maps Kubeflow's replica types to ours, in the order our list
	// gets them. Kubeflow matches the map's keys in any case.
	types []replicaTypeMapping
	// defaultRestartPolicy is Kubeflow's restart policy of a replica that
	// gives none.
	defaultRestartPolicy v1beta1.RestartPolicy
}

type replicaTypeMapping struct {
	kubeflow string
	ours     v1beta1.ReplicaType
	// restartPolicy, when set, is this type's default instead of the
	// kind's (mpi-operator's launcher).
	restartPolicy v1beta1.RestartPolicy
}

// kubeflowRestartPolicies are the restart policies Kubeflow accepts; ours
// has the same ones, with the same names.
var kubeflowRestartPolicies = []v1beta1.RestartPolicy{
	v1beta1.RestartPolicyAlways, v1beta1.RestartPolicyOnFailure, v1beta1.RestartPolicyNever, v1beta1.RestartPolicyExitCode,
}

// convertSharedSpec converts what every kind's spec has: the replicas and the
// run policy. It returns the replicas' paths in the input.
func (k *replicaKind) convertSharedSpec(spec *object, out *v1beta1.TrainingJobSpec, w *warnings) ([]*field.Path, error) {
	replicas, paths, err := k.convert(spec, w)
	if err != nil {
		return nil, err
	}
	out.ReplicaSpecs = replicas
	return paths, convertRunPolicy(spec, out, w)
}

// convert turns the map of replica specs into our ordered list. It also
// returns the path of each replica in the input, for later warnings.
func (k *replicaKind) convert(spec *object, w *warnings) ([]v1beta1.ReplicaSpec, []*field.Path, error) {
	value, path, present := spec.take(k.specsField)
	if !present {
		return nil, nil, fmt.Errorf("%s: required: a %s lists its replicas here", path, k.kind)
	}
	specs, ok := value.(map[string]interface{})
	if !ok {
		return nil, nil, fmt.Errorf("%s: must be an object keyed by replica type, not %s", path, describe(value))
	}
	keys := make([]string, 0, len(specs))
	for key := range specs {
		keys = append(keys, key)
	}
	sort.Strings(keys)

	type converted struct {
		order   int
		replica v1beta1.ReplicaSpec
		path    *field.Path
	}
	var list []converted
	keyOf := make(map[v1beta1.ReplicaType]string, len(keys))
	for _, key := range keys {
		replicaPath := path.Child(key)
		order, ours, found := k.lookup(key)
		if !found {
			return nil, nil, fmt.Errorf("%s: unknown %s replica type %q; Kubeflow accepts %s", replicaPath, k.kind, key, k.spellings())
		}
		if other, taken := keyOf[ours]; taken {
			return nil, nil, fmt.Errorf("%s: %q and %q are the same replica type %q", replicaPath, other, key, ours)
		}
		keyOf[ours] = key
		replica, err := k.convertReplica(ours, replicaPath, specs[key], w)
		if err != nil {
			return nil, nil, err
		}
		list = append(list, converted{order, replica, replicaPath})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].order < list[j].order })

	replicas := make([]v1beta1.ReplicaSpec, len(list))
	paths := make([]*field.Path, len(list))
	for i, c := range list {
		replicas[i], paths[i] = c.replica, c.path
	}
	return replicas, paths, nil
}

// lookup finds a Kubeflow replica type, in any case, and returns our type
// and its place in our list.
func (k *replicaKind) lookup(key string) (int, v1beta1.ReplicaType, bool) {
	for i, t := range k.types {
		if strings.EqualFold(key, t.kubeflow) {
			return i, t.ours, true
		}
	}
	return 0, "", false
}

// defaultRestartPolicyOf is Kubeflow's restart policy of a replica of the
// type that gives none.
func (k *replicaKind) defaultRestartPolicyOf(typ v1beta1.ReplicaType) v1beta1.RestartPolicy {
	for _, t := range k.types {
		if t.ours == typ && t.restartPolicy != "" {
			return t.restartPolicy
		}
	}
	return k.defaultRestartPolicy
}

func (k *replicaKind) spellings() string {
	names := make([]string, len(k.types))
	for i, t := range k.types {
		names[i] = t.kubeflow
	}
	return strings.Join(names, ", ")
}

// convertReplica converts one replica spec: replicas and the pod template as
// they are, the restart policy with Kubeflow's default filled in.
func (k *replicaKind) convertReplica(typ v1beta1.ReplicaType, path *field.Path, value interface{}, w *warnings) (v1beta1.ReplicaSpec, error) {
	out := v1beta1.ReplicaSpec{Type: typ}
	in, err := newObject(path, value)
	if err != nil {
		return out, err
	}
	replicas, present, err := in.takeInt32("replicas")
	if err != nil {
		return out, err
	}
	if present {
		out.Replicas = &replicas
	}

	policy, _, err := in.takeString("restartPolicy")
	if err != nil {
		return out, err
	}
	out.RestartPolicy = v1beta1.RestartPolicy(policy)
	if out.RestartPolicy == "" {
		out.RestartPolicy = k.defaultRestartPolicyOf(typ)
	} else if !slices.Contains(kubeflowRestartPolicies, out.RestartPolicy) {
		return out, fmt.Errorf("%s: unsupported value %q; Kubeflow accepts %s", path.Child("restartPolicy"), policy, joinQuoted(kubeflowRestartPolicies))
	}

	template, templatePath, present := in.take("template")
	if !present {
		return out, fmt.Errorf("%s: required: the pod each replica runs", templatePath)
	}
	if out.Template, err = decodePodTemplate(templatePath, withoutTypeMeta(templatePath, template, w)); err != nil {
		return out, err
	}
	in.reportLeftovers(w)
	return out, nil
}

// withoutTypeMeta drops apiVersion and kind from a pod template, which has
// neither: some of Kubeflow's own examples write them, and Kubernetes prunes
// them from a Kubeflow job, whose schema lacks them. The input is not
// changed.
func withoutTypeMeta(path *field.Path, template interface{}, w *warnings) interface{} {
	fields, ok := template.(map[string]interface{})
	if !ok {
		return template
	}
	var kept map[string]interface{}
	for _, name := range []string{"apiVersion", "kind"} {
		if _, present := fields[name]; !present {
			continue
		}
		if kept == nil {
			kept = maps.Clone(fields)
		}
		delete(kept, name)
		w.add(path.Child(name), "dropped: a pod template has no apiVersion or kind (Kubernetes prunes them from a Kubeflow job)")
	}
	if kept == nil {
		return template
	}
	return kept
}

// decodePodTemplate decodes a pod template strictly: a field that is not part
// of a PodTemplateSpec is an error, since the template is carried over whole.
func decodePodTemplate(path *field.Path, value interface{}) (corev1.PodTemplateSpec, error) {
	var template corev1.PodTemplateSpec
	fields, ok := value.(map[string]interface{})
	if !ok {
		return template, fmt.Errorf("%s: must be a pod template, not %s", path, describe(value))
	}
	// Decoding the JSON reports wrong types with the field they are in;
	// the unstructured converter reports fields a template does not have.
	data, err := json.Marshal(fields)
	if err != nil {
		return template, fmt.Errorf("%s: %w", path, err)
	}
	if err := utiljson.Unmarshal(data, &template); err != nil {
		return template, fmt.Errorf("%s: %w", path, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(fields, &corev1.PodTemplateSpec{}, true); err != nil {
		return template, fmt.Errorf("%s: %w", path, err)
	}
	return template, nil
}

func joinQuoted[T ~string](list []T) string {
	quoted := make([]string, len(list))
	for i, x := range list {
		quoted[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(quoted, ", ")
}
