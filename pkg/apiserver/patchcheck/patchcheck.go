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

// Package patchcheck refuses the JSON patches (RFC 6902) that the patch
// library of k8s.io/apiserver, gopkg.in/evanphx/json-patch.v4, cannot be
// trusted with. It is a package of its own so that the server and the
// fuzz tests of the patch path apply the same check.
package patchcheck

import (
	"encoding/json"
	"fmt"
)

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
