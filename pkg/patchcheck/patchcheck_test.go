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

package patchcheck

import (
	"errors"
	"testing"
)

func TestGuard(t *testing.T) {
	if err := Guard(func() error { return nil }); err != nil {
		t.Errorf("no panic: %v", err)
	}
	own := errors.New("the patch does not apply")
	if err := Guard(func() error { return own }); err != own {
		t.Errorf("an error of its own became %v", err)
	}
	err := Guard(func() error {
		var m map[string]int
		//lint:ignore SA5000 the panic is what the test needs
		m["a"] = 1 // panics: assignment to entry in nil map
		return nil
	})
	var panicked *PanicError
	if !errors.As(err, &panicked) || len(panicked.Stack) == 0 ||
		err.Error() != "the patch library failed on the patch: assignment to entry in nil map" {
		t.Errorf("a panic: %v, want it as a PanicError with its stack", err)
	}
}

func TestMissingValue(t *testing.T) {
	cases := map[string]string{
		`[{"op":"replace","path":""}]`:                          `operation 0 of the JSON patch, replace at "", has no value, which RFC 6902 requires`,
		`[{"op":"remove","path":"/a"},{"op":"test","path":""}]`: `operation 1 of the JSON patch, test at "", has no value, which RFC 6902 requires`,
		`[{"op":"add","path":"/spec/x"}]`:                       `operation 0 of the JSON patch, add at "/spec/x", has no value, which RFC 6902 requires`,
		`[{"op":"replace","path":"","Value":1}]`:                `operation 0 of the JSON patch, replace at "", has no value, which RFC 6902 requires`,
		`[{"op":"replace","path":"","value":null}]`:             "",
		`[{"op":"add","path":"/a","value":{}},{"op":"remove","path":"/a"},{"op":"move","from":"/b","path":"/c"}]`: "",
		`[{"op":"copy","from":"/a","path":""}]`: "",
		`[{"path":""}]`:                         "",
		`{"op":"replace","path":""}`:            "",
		`[{"op":"replace","path":""`:            "",
		``:                                      "",
	}
	for patch, want := range cases {
		err := MissingValue([]byte(patch))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("MissingValue(%s) = %q, want %q", patch, got, want)
		}
	}
}
