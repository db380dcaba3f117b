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
	"bytes"
	"io"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/patchcheck"
)

// withJSONPatchCheck refuses, with 400, a JSON patch that the handlers'
// patch library cannot be trusted with (see patchcheck): one of them made
// the library panic, and the request went without an answer. It reads at
// most limit+1 bytes of the body, and hands the body on whole, so the
// handler still refuses one over the limit.
func withJSONPatchCheck(handler http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPatch || r.Body == nil || !isJSONPatch(r.Header.Get("Content-Type")) {
			handler.ServeHTTP(w, r)
			return
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
		if err == nil && int64(len(data)) <= limit {
			if err := patchcheck.MissingValue(data); err != nil {
				writeStatus(w, apierrors.NewBadRequest(err.Error()))
				return
			}
		}
		handler.ServeHTTP(w, r)
	})
}

func isJSONPatch(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == string(types.JSONPatchType)
}
