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

package apiserver

import (
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

func TestServerFeatureDefaults(t *testing.T) {
	gate := utilfeature.DefaultMutableFeatureGate
	t.Cleanup(func() { setServerFeatureDefaults(gate) })

	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--feature-gates=ListFromCacheSnapshot=true"}, true},
		{[]string{"--feature-gates=ListFromCacheSnapshot=false"}, false},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := gate.Enabled(features.ListFromCacheSnapshot); got != tc.want {
			t.Errorf("%v: ListFromCacheSnapshot enabled = %v, want %v", tc.args, got, tc.want)
		}
	}
}
