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

package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errorBody is what every failed API call of the dashboard answers: the
// Kubernetes API's own Status when the API refused, so that the page shows
// the server's code, reason, message and the fields it names, or one of the
// same shape that the dashboard wrote.
type errorBody struct {
	Status metav1.Status `json:"status"`
}

// writeJSON answers with v as JSON. Answers of the API are never cached: they
// are one user's view of the cluster at one moment.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	// The status line is sent; an encoding error can only be a broken
	// connection, which nobody is left to hear about.
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with a Status the dashboard wrote.
func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, errorBody{Status: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    int32(code),
		Reason:  metav1.StatusReason(http.StatusText(code)),
		Message: message,
	}})
}

// writeAPIError passes the Kubernetes API's refusal through with its code.
// Errors that never reached the API (a broken connection, a kubeconfig that
// cannot sign in) are a 502: the dashboard could not get an answer.
func writeAPIError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	writeJSON(w, int(status.Code), errorBody{Status: status})
}

// statusOf is the API's Status of err, or, for an error that never reached
// the API, a 502 that says what went wrong.
func statusOf(err error) metav1.Status {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) && apiStatus.Status().Code != 0 {
		return apiStatus.Status()
	}
	return metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadGateway,
		Reason:  metav1.StatusReason(http.StatusText(http.StatusBadGateway)),
		Message: err.Error(),
	}
}
