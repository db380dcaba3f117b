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

// Package patchcheck keeps patches that the patch libraries of
// k8s.io/apiserver cannot be trusted with from crashing a request: it
// refuses JSON patches (RFC 6902) that gopkg.in/evanphx/json-patch.v4
// panics on, and turns any panic of applying a patch into an error. It is a
// package of its own, with no dependencies, so that the server and the fuzz
// tests of the patch path guard patches alike.
package patchcheck

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
)

// PanicError is a panic of applying a patch, as an error.
type PanicError struct {
	// Value is what the patch library panicked with.
	Value any
	// Stack is where it panicked, for the server's log.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("the patch library failed on the patch: %v", e.Value)
}

// Guard runs apply, and returns a panic of it as a *PanicError. The patch
// libraries panic on some patches (k8s.io/apimachinery's strategic merge
// patch on a merge key whose value is a map, for one); such a patch is the
// client's mistake, and leaves nothing half done: apply only computes a new
// object from copies.
func Guard(apply func() error) (err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			err = &PanicError{Value: recovered, Stack: debug.Stack()}
		}
	}()
	return apply()
}

// MissingValue names the first add, replace or test operation of a JSON
// patch that has no value, which RFC 6902 requires: the library panics on
// a replace or test of the whole document without one (evanphx/json-patch
// issue 168), and stores null for the others. It returns nil for a patch
// without such an operation, and for one that is no list of operations,
// which the library refuses with an error of its own.
func MissingValue(patch []byte) error {
	// Decoded as the library decodes it: exact keys, the last of duplicates.
	var operations []map[string]json.RawMessage
	if err := json.Unmarshal(patch, &operations); err != nil {
		return nil
	}
	for i, operation := range operations {
		var kind string
		if err := json.Unmarshal(operation["op"], &kind); err != nil {
			continue
		}
		switch kind {
		case "add", "replace", "test":
		default:
			continue
		}
		if _, hasValue := operation["value"]; !hasValue {
			var path string
			_ = json.Unmarshal(operation["path"], &path)
			return fmt.Errorf("operation %d of the JSON patch, %s at %q, has no value, which RFC 6902 requires", i, kind, path)
		}
	}
	return nil
}
