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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// maxManifestBytes bounds a create's body: a job's manifest is a few KiB,
// and the API server refuses requests over 3 MiB anyway.
const maxManifestBytes = 1 << 20

// pause and resume post the action subresources, as kubectl training pause
// and resume do; RBAC grants them apart from editing the job.
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.act(w, r, jobClient.Pause)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	s.act(w, r, jobClient.Resume)
}

// maxActionBytes bounds the body of an action: a debug request names a few
// replica types and commands.
const maxActionBytes = 64 << 10

// debug starts the job's pods in debug mode: every training container runs
// sleep inf, or what the body's DebugRequest says per replica type. Resume
// ends it.
func (s *Server) debug(w http.ResponseWriter, r *http.Request) {
	request := &v1beta1.DebugRequest{}
	if err := decodeOptionalJSON(http.MaxBytesReader(w, r.Body, maxActionBytes), request); err != nil {
		writeError(w, http.StatusBadRequest, "reading the debug request: "+err.Error())
		return
	}
	s.act(w, r, func(c jobClient, ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
		return c.Debug(ctx, name, request, opts)
	})
}

// scaleRequest is the body of a scale: the replicas an elastic job should
// run.
type scaleRequest struct {
	Replicas *int32 `json:"replicas"`
}

// scale sets an elastic job's replicas through its scale subresource, as
// kubectl scale does, and answers with the job as it then is. The API
// decides what is allowed: a job that is not elastic, or a count outside its
// bounds, is its 422.
func (s *Server) scale(w http.ResponseWriter, r *http.Request) {
	var request scaleRequest
	if err := decodeOptionalJSON(http.MaxBytesReader(w, r.Body, maxActionBytes), &request); err != nil {
		writeError(w, http.StatusBadRequest, "reading the scale request: "+err.Error())
		return
	}
	if request.Replicas == nil {
		writeError(w, http.StatusBadRequest, "replicas: required")
		return
	}
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	if _, err := t.client().Scale(r.Context(), t.name, *request.Replicas); err != nil {
		writeAPIError(w, err)
		return
	}
	job, err := t.client().Get(r.Context(), t.name)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, summarize(t.kind, job))
}

// decodeOptionalJSON decodes a JSON body into v, strictly; an empty body
// leaves v as it is.
func decodeOptionalJSON(body io.Reader, v any) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	strict, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// act sends an action and answers with the job it returns, or the API's
// refusal as it is.
func (s *Server) act(w http.ResponseWriter, r *http.Request, action func(jobClient, context.Context, string, metav1.CreateOptions) (v1beta1.TrainingJob, error)) {
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	job, err := action(t.client(), r.Context(), t.name, metav1.CreateOptions{})
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, summarize(t.kind, job))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	// Foreground: the job stays, with its deletion timestamp, until its
	// pods are gone, so that the list shows it going.
	foreground := metav1.DeletePropagationForeground
	if err := t.client().Delete(r.Context(), t.name, metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusOK,
		Message: fmt.Sprintf("%s %s/%s deleted", t.kind.Name, t.namespace, t.name)})
}

// create creates the job the body's YAML (or JSON) describes, in its
// metadata.namespace, else the user's namespace. What the manifest itself
// gets wrong (not one document, another group, an unknown field) is a 400
// naming it; what the API server refuses, its Status.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	job, kind, err := decodeManifest(http.MaxBytesReader(w, r.Body, maxManifestBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	namespace := job.GetNamespace()
	if namespace == "" {
		namespace = c.Namespace
	}
	created, err := kind.Client(c.Training, namespace).Create(r.Context(), job, metav1.CreateOptions{})
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, summarize(kind, created))
}

// decodeManifest reads one training job from YAML or JSON, strictly, so that
// a misspelt field is an error naming it rather than silently dropped.
func decodeManifest(body io.Reader) (v1beta1.TrainingJob, jobKind, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(body))
	var document []byte
	for {
		next, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the manifest: %w", err)
		}
		if len(bytes.TrimSpace(next)) == 0 {
			continue
		}
		if document != nil {
			return nil, nil, errors.New("the manifest holds more than one document: create one job at a time")
		}
		document = next
	}
	if document == nil {
		return nil, nil, errors.New("the manifest is empty")
	}
	var typeMeta metav1.TypeMeta
	if err := yaml.Unmarshal(document, &typeMeta); err != nil {
		return nil, nil, fmt.Errorf("reading the manifest: %w", err)
	}
	if typeMeta.APIVersion != v1beta1.SchemeGroupVersion.String() {
		return nil, nil, fmt.Errorf("apiVersion: %q is not %s", typeMeta.APIVersion, v1beta1.SchemeGroupVersion)
	}
	kind, ok := kindByKind(typeMeta.Kind)
	if !ok {
		names := make([]string, len(jobKinds))
		for i, k := range jobKinds {
			names[i] = k.Name
		}
		return nil, nil, fmt.Errorf("kind: %q is not a training job kind (%s)", typeMeta.Kind, strings.Join(names, ", "))
	}
	data, err := yaml.YAMLToJSON(document)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the manifest: %w", err)
	}
	job := kind.New()
	// Decoded as the API server decodes with fieldValidation=Strict, so
	// that the errors name the field's path.
	strict, err := kjson.UnmarshalStrict(data, job, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the %s: %w", kind.Name, err)
	}
	if len(strict) > 0 {
		return nil, nil, fmt.Errorf("reading the %s: %w", kind.Name, errors.Join(strict...))
	}
	return job, kind, nil
}
