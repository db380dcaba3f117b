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
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// object is one JSON object of the input while it is being converted. Each
// field is taken out as it is converted, so that whatever is left at the end
// can be reported instead of silently dropped.
type object struct {
	path   *field.Path
	fields map[string]interface{}
}

// newObject wraps value, the field at path; null or absent is an empty object.
func newObject(path *field.Path, value interface{}) (*object, error) {
	fields := map[string]interface{}{}
	switch v := value.(type) {
	case nil:
	case map[string]interface{}:
		for key, x := range v {
			fields[key] = x
		}
	default:
		return nil, fmt.Errorf("%s: must be an object, not %s", path, describe(value))
	}
	return &object{path: path, fields: fields}, nil
}

// take removes a field and returns its value and path. A null value counts
// as absent: it carries nothing.
func (o *object) take(key string) (value interface{}, path *field.Path, present bool) {
	value, present = o.fields[key]
	delete(o.fields, key)
	return value, o.path.Child(key), present && value != nil
}

// takeObject removes a field that holds an object.
func (o *object) takeObject(key string) (*object, error) {
	value, path, _ := o.take(key)
	return newObject(path, value)
}

func (o *object) takeString(key string) (string, bool, error) {
	value, path, present := o.take(key)
	if !present {
		return "", false, nil
	}
	s, ok := value.(string)
	if !ok {
		return "", false, fmt.Errorf("%s: must be a string, not %s", path, describe(value))
	}
	return s, true, nil
}

func (o *object) takeBool(key string) (bool, bool, error) {
	value, path, present := o.take(key)
	if !present {
		return false, false, nil
	}
	b, ok := value.(bool)
	if !ok {
		return false, false, fmt.Errorf("%s: must be true or false, not %s", path, describe(value))
	}
	return b, true, nil
}

func (o *object) takeInt64(key string) (int64, bool, error) {
	return o.takeInteger(key, math.MinInt64, math.MaxInt64)
}

func (o *object) takeInt32(key string) (int32, bool, error) {
	n, present, err := o.takeInteger(key, math.MinInt32, math.MaxInt32)
	return int32(n), present, err
}

// takeInteger removes a field that holds a whole number from lowest to highest.
func (o *object) takeInteger(key string, lowest, highest int64) (int64, bool, error) {
	value, path, present := o.take(key)
	if !present {
		return 0, false, nil
	}
	n, err := integer(value, lowest, highest)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", path, err)
	}
	return n, true, nil
}

// takeStringMap removes a field that maps strings to strings, such as labels.
func (o *object) takeStringMap(key string) (map[string]string, error) {
	value, path, present := o.take(key)
	if !present {
		return nil, nil
	}
	m, ok := value.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: must be an object of strings, not %s", path, describe(value))
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s: must be a string, not %s", path.Key(k), describe(v))
		}
		out[k] = s
	}
	return out, nil
}

// reportLeftovers warns of every field not taken out: the converter does not
// know it, so it is not in the result.
func (o *object) reportLeftovers(w *warnings) {
	keys := make([]string, 0, len(o.fields))
	for key, value := range o.fields {
		if value != nil {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		w.add(o.path.Child(key), "unknown field, not converted")
	}
}

// integer reads a whole number between lowest and highest. Documents decoded
// by Convert hold int64 and float64; callers of ConvertObject may hand in
// other number types.
func integer(value interface{}, lowest, highest int64) (int64, error) {
	var n int64
	switch v := value.(type) {
	case int64:
		n = v
	case int:
		n = int64(v)
	case int32:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return 0, fmt.Errorf("must be a whole number, not %v", v)
		}
		n = int64(v)
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return 0, fmt.Errorf("must be a whole number, not %s", v)
		}
		n = i
	default:
		return 0, fmt.Errorf("must be a whole number, not %s", describe(value))
	}
	if n < lowest || n > highest {
		return 0, fmt.Errorf("%d is out of range [%d, %d]", n, lowest, highest)
	}
	return n, nil
}

// describe names the JSON type of a value for error messages.
func describe(value interface{}) string {
	switch v := value.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	case map[string]interface{}:
		return "an object"
	case []interface{}:
		return "a list"
	default:
		return fmt.Sprintf("the number %v", v)
	}
}
