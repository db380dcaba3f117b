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

// Package e2e tests the whole system on the local control plane that
// hack/test-e2e.sh starts (make test-e2e): kube-apiserver aggregating the
// training-apiserver, the training-controller-manager, kube-controller-manager
// and kwok's simulated nodes. The tests drive it through the generated
// clientset and the real kubectl binary.
//
// Tests that restart a component run alone, first; every other test calls
// t.Parallel(). Most of their time is spent waiting for simulated pods, so
// the suite raises -test.parallel to 8 unless it is given explicitly.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"tensorstack.dev/training/test/e2e/framework"
)

// defaultParallel is how many parallel tests run at once when -test.parallel
// is not given: the tests mostly wait, so more than the 2 cores.
const defaultParallel = "8"

func TestMain(m *testing.M) {
	flag.Parse()
	if !framework.Enabled() {
		framework.SkipAll("the end-to-end tests need the local stack: E2E_LOCAL_DIR is not set; run them with make test-e2e")
		os.Exit(m.Run())
	}
	explicit := false
	flag.Visit(func(fl *flag.Flag) {
		if fl.Name == "test.parallel" {
			explicit = true
		}
	})
	if !explicit {
		_ = flag.Set("test.parallel", defaultParallel)
	}
	if err := framework.Setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
