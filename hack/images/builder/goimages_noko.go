//go:build noko

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

import "errors"

// goImages is ko's, which this build leaves out (-tags noko): the local
// stack's pause and training images need only layers, and ko is most of the
// builder's compile.
func goImages([]string) error {
	return errors.New("this builder is built without ko (-tags noko) for the local stack's images; hack/build-images.sh builds the one with it")
}
