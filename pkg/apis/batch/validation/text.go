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

package validation

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A JSON request cannot carry bytes that are not UTF-8 (the decoder makes
// each one U+FFFD), but a protobuf one can, into any string of the object.
// Stored, such a string reads back changed (JSON again), breaks a server-side
// apply's field manager and, in a pod, every tool that reads the text. So
// every string a client sends must be text.

// maxQuotedBytes is how much of a refused string a message quotes.
const maxQuotedBytes = 64

// ValidateText reports every string in v, a spec or any part of an object,
// and every map key, that is not valid UTF-8, under its JSON field path.
func ValidateText(v any, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	walkText(reflect.ValueOf(v), fldPath, &allErrs)
	return allErrs
}

func walkText(v reflect.Value, fldPath *field.Path, allErrs *field.ErrorList) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkText(v.Elem(), fldPath, allErrs)
		}
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) {
			*allErrs = append(*allErrs, field.Invalid(fldPath, startOf(s), "must be valid UTF-8"))
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not text
		}
		for i := 0; i < v.Len(); i++ {
			walkText(v.Index(i), fldPath.Index(i), allErrs)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			key := iter.Key()
			if key.Kind() == reflect.String && !utf8.ValidString(key.String()) {
				*allErrs = append(*allErrs, field.Invalid(fldPath, startOf(key.String()), "keys must be valid UTF-8"))
				continue
			}
			walkText(iter.Value(), fldPath.Key(key.String()), allErrs)
		}
	case reflect.Struct:
		t := v.Type()
		// A type that writes its own JSON (an IntOrString) is one value
		// there: its strings are reported at its own path.
		leaf := t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, inline := jsonName(f)
			if name == "-" {
				continue
			}
			if inline || leaf {
				walkText(v.Field(i), fldPath, allErrs)
			} else {
				walkText(v.Field(i), fldPath.Child(name), allErrs)
			}
		}
	}
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// jsonName is the field's name in JSON, and whether its fields are the
// parent's (an embedded struct without a name of its own).
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, options, _ := strings.Cut(tag, ",")
	if strings.Contains(","+options+",", ",inline,") || (f.Anonymous && name == "") {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// startOf is the start of s for a message, which quotes it with the bytes
// that are not text escaped.
func startOf(s string) string {
	if len(s) > maxQuotedBytes {
		return s[:maxQuotedBytes] + "..."
	}
	return s
}
