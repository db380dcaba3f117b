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

package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the server's GOGC unless the environment sets one.
//
// Most of the server's heap is the watch cache: every job, decoded, for as
// long as it exists. Go's default (100) lets the heap grow to twice what is
// live before it collects, so the resident size was about twice the cache.
// At 50 it is one and a half times; bench-api measured no change in
// creates, lists or deletes per second, as requests allocate little next to
// what the cache holds.
const defaultGCPercent = 50

// setDefaultGCPercent applies defaultGCPercent when GOGC is not set.
func setDefaultGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

func init() { setDefaultGCPercent(os.Getenv) }
