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

package trainingruntime

import (
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The merge rule: a job made from a runtime starts from the runtime's
// template, and whatever the job gives itself wins.
//
//   - Replica specs are matched by type. A type both have is the runtime's
//     with the job's replicas and restartPolicy when it sets them, and its
//     pod template is the runtime's with the job's applied as a strategic
//     merge patch, as kubectl patch applies one: containers merge by name,
//     their env and volumes by name, volume mounts by path, ports by
//     number; lists without a key (command, args, tolerations) are the
//     job's when it gives them. Containers, init containers and variables
//     keep the runtime's order, the job's new ones after them. Types only
//     the runtime has are kept, types only the job has are added after
//     them.
//   - Every other field merges as a JSON merge patch (RFC 7386): objects
//     field by field, anything else is the job's when it sets it.
//
// A field the job leaves out keeps the runtime's value; nothing the job
// gives can delete one of the runtime's.

// mergeSpec merges the job's spec (overlay) over the runtime's (base) into
// out, which may be overlay. All three point to the same kind's spec type.
func mergeSpec(base, overlay, out any) error {
	b, err := toMap(base)
	if err != nil {
		return err
	}
	o, err := toMap(overlay)
	if err != nil {
		return err
	}
	replicas, err := mergeReplicaSpecs(b["replicaSpecs"], o["replicaSpecs"])
	if err != nil {
		return err
	}
	delete(b, "replicaSpecs")
	delete(o, "replicaSpecs")
	merged := mergeObjects(b, o)
	if len(replicas) > 0 {
		merged["replicaSpecs"] = replicas
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	// Unmarshalling into a struct keeps the fields the JSON leaves out.
	reflect.ValueOf(out).Elem().SetZero()
	return json.Unmarshal(raw, out)
}

// mergeReplicaSpecs merges two replicaSpecs lists by type.
func mergeReplicaSpecs(base, overlay any) ([]any, error) {
	baseList, _ := base.([]any)
	overlayList, _ := overlay.([]any)
	byType := make(map[string]map[string]any, len(overlayList))
	for _, item := range overlayList {
		if spec, ok := item.(map[string]any); ok {
			byType[fmt.Sprint(spec["type"])] = spec
		}
	}
	out := make([]any, 0, len(baseList)+len(overlayList))
	for _, item := range baseList {
		spec, ok := item.(map[string]any)
		if !ok {
			continue
		}
		t := fmt.Sprint(spec["type"])
		if job, ok := byType[t]; ok {
			merged, err := mergeReplicaSpec(spec, job)
			if err != nil {
				return nil, fmt.Errorf("replica type %s: %w", t, err)
			}
			spec = merged
			delete(byType, t)
		}
		out = append(out, spec)
	}
	for _, item := range overlayList {
		if spec, ok := item.(map[string]any); ok {
			if _, left := byType[fmt.Sprint(spec["type"])]; left {
				out = append(out, spec)
			}
		}
	}
	return out, nil
}

// mergeReplicaSpec merges one replica type's spec: the pod template as a
// strategic merge patch, the rest field by field.
func mergeReplicaSpec(base, overlay map[string]any) (map[string]any, error) {
	baseTemplate, _ := base["template"].(map[string]any)
	overlayTemplate, _ := overlay["template"].(map[string]any)
	rest := mergeObjects(without(base, "template"), without(overlay, "template"))
	switch {
	case overlayTemplate == nil:
		rest["template"] = baseTemplate
	case baseTemplate == nil:
		rest["template"] = overlayTemplate
	default:
		// The patch changes the original it is given; the base is kept for
		// its order.
		template, err := strategicpatch.StrategicMergeMapPatch(runtime.DeepCopyJSON(baseTemplate), overlayTemplate,
			corev1.PodTemplateSpec{})
		if err != nil {
			return nil, err
		}
		keepOrder(template, baseTemplate)
		rest["template"] = map[string]any(template)
	}
	return rest, nil
}

// keepOrder puts the containers, init containers and each container's
// variables of a merged pod template back in the runtime's order, with the
// job's new ones after them. A strategic merge patch puts the patch's items
// first, but these lists' order means something: init containers run in
// it, and a variable can refer only to those before it.
func keepOrder(merged, base map[string]any) {
	spec, _ := merged["spec"].(map[string]any)
	baseSpec, _ := base["spec"].(map[string]any)
	if spec == nil || baseSpec == nil {
		return
	}
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := spec[list].([]any)
		baseContainers, _ := baseSpec[list].([]any)
		if containers == nil {
			continue
		}
		spec[list] = inBaseOrder(containers, baseContainers, "name")
		for _, c := range containers {
			container, _ := c.(map[string]any)
			baseContainer := itemByKey(baseContainers, "name", container["name"])
			if env, ok := container["env"].([]any); ok && baseContainer != nil {
				baseEnv, _ := baseContainer["env"].([]any)
				container["env"] = inBaseOrder(env, baseEnv, "name")
			}
		}
	}
}

// inBaseOrder is items with those that base has, by key, in base's order,
// followed by the others in their own order.
func inBaseOrder(items, base []any, key string) []any {
	out := make([]any, 0, len(items))
	taken := make([]bool, len(items))
	for _, b := range base {
		bm, _ := b.(map[string]any)
		for i, item := range items {
			if m, ok := item.(map[string]any); ok && !taken[i] && bm != nil && m[key] == bm[key] {
				out, taken[i] = append(out, item), true
				break
			}
		}
	}
	for i, item := range items {
		if !taken[i] {
			out = append(out, item)
		}
	}
	return out
}

// itemByKey is the object of the list whose key field is value, or nil.
func itemByKey(list []any, key string, value any) map[string]any {
	for _, item := range list {
		if m, ok := item.(map[string]any); ok && m[key] == value {
			return m
		}
	}
	return nil
}

// mergeObjects is a JSON merge patch of overlay onto base, both already
// free of nulls: objects merge field by field, other values replace.
func mergeObjects(base, overlay map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(overlay))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range overlay {
		if bv, ok := out[k].(map[string]any); ok {
			if ov, ok := v.(map[string]any); ok {
				out[k] = mergeObjects(bv, ov)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// toMap is the JSON form of a typed value, without nulls: a field a typed
// value leaves unset is absent, never an instruction to delete.
func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	dropNulls(m)
	return m, nil
}

func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if item == nil {
				delete(v, k)
				continue
			}
			dropNulls(item)
		}
	case []any:
		for _, item := range v {
			dropNulls(item)
		}
	}
}

func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
