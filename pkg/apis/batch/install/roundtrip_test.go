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

package install

import (
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"tensorstack.dev/training/pkg/apis/batch"
	batchfuzzer "tensorstack.dev/training/pkg/apis/batch/fuzzer"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestRoundTripTypes fills every internal kind of the group at random and
// checks that it survives v1beta1 and each encoding, JSON and protobuf,
// unchanged.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, batchfuzzer.Funcs)
}

// TestVersionedRoundTrip fills every v1beta1 kind of the group at random and
// checks that converting it to the internal version and back changes
// nothing, so no v1beta1 field is lost on the way to storage or to clients.
// (The deprecated enable fields are the one intended loss; the fill functions
// leave them unset and the v1beta1 conversion tests cover them.)
func TestVersionedRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	filler := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, batchfuzzer.Funcs), rand.NewSource(rand.Int63()), codecs)

	// The kinds of the group itself; the option kinds registered alongside
	// them in v1beta1 belong to meta.k8s.io.
	for kind := range scheme.KnownTypes(batch.SchemeGroupVersion) {
		t.Run(kind, func(t *testing.T) {
			for i := 0; i < *roundtrip.FuzzIters; i++ {
				original, err := scheme.New(v1beta1.SchemeGroupVersion.WithKind(kind))
				if err != nil {
					t.Fatal(err)
				}
				filler.Fill(original)
				original.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})

				internal, err := scheme.ConvertToVersion(original.DeepCopyObject(), batch.SchemeGroupVersion)
				if err != nil {
					t.Fatalf("converting to the internal version: %v", err)
				}
				back, err := scheme.ConvertToVersion(internal, v1beta1.SchemeGroupVersion)
				if err != nil {
					t.Fatalf("converting back to v1beta1: %v", err)
				}
				back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				if !apiequality.Semantic.DeepEqual(original, back) {
					t.Fatalf("the round trip changed the object:\n%s", cmp.Diff(original, back))
				}
			}
		})
	}
}
