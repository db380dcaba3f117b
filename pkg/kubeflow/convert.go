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

package kubeflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The Kubeflow API version and kinds that are converted.
const (
	kubeflowAPIVersion = "kubeflow.org/v1"
	// mpiOperatorAPIVersion is the version mpi-operator serves its MPIJob
	// in, which training-operator's kubeflow.org/v1 MPIJob preceded.
	mpiOperatorAPIVersion = "kubeflow.org/v2beta1"
	tfJobKind             = "TFJob"
	pyTorchJobKind        = "PyTorchJob"
	xgboostJobKind        = "XGBoostJob"
	mpiJobKind            = "MPIJob"
)

// convertedKinds are the Kubeflow kinds converted, in the order messages
// name them.
var convertedKinds = []string{tfJobKind, pyTorchJobKind, xgboostJobKind, mpiJobKind}

// Converted is one Kubeflow job converted into ours.
type Converted struct {
	// Object is *v1beta1.TensorFlowTrainingJob or *v1beta1.PyTorchTrainingJob (tensorstack.dev/training/pkg/apis/batch/v1beta1), with TypeMeta set.
	Object   runtime.Object
	Warnings []Warning
}

// Convert reads a stream of YAML or JSON documents (separated by ---, as kubectl accepts) and converts every
// kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob and MPIJob, and mpi-operator's kubeflow.org/v2beta1 MPIJob, in it. A document of any other kind is an error naming its index and kind
// (empty documents are skipped). Malformed input is an error with the document index, never a panic.
//
// Documents are counted from 0; empty ones (only whitespace or comments) are
// not counted.
func Convert(r io.Reader) ([]Converted, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	// The documents before a malformed one are converted first, so that an
	// error in one of them is reported as the first error.
	documents, splitErr := splitDocuments(data)
	var out []Converted
	index := 0
	for _, document := range documents {
		var obj map[string]interface{}
		// Strict: a field given twice is an error rather than a silent choice.
		if err := utilyaml.UnmarshalStrict(document, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		if obj == nil {
			continue // only whitespace or comments
		}
		converted, err := ConvertObject(obj)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		out = append(out, converted)
		index++
	}
	if splitErr != nil {
		return nil, fmt.Errorf("document %d: %w", index, splitErr)
	}
	return out, nil
}

// splitDocuments cuts a stream into its documents, as kubectl reads them: a
// stream that starts with { is a sequence of JSON objects, any other YAML
// documents separated by --- lines. It returns the documents before any
// error.
func splitDocuments(data []byte) ([][]byte, error) {
	if utilyaml.IsJSONBuffer(data) {
		documents, err := splitJSON(data)
		// One JSON object followed by something else may still be YAML, of
		// which JSON is a part; kubectl reads it as YAML too.
		if err == nil || len(documents) > 1 {
			return documents, err
		}
	}
	return splitYAML(data)
}

func splitJSON(data []byte) ([][]byte, error) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	var documents [][]byte
	for {
		var document json.RawMessage
		err := decoder.Decode(&document)
		if errors.Is(err, io.EOF) {
			return documents, nil
		}
		if err != nil {
			return documents, err
		}
		documents = append(documents, document)
	}
}

func splitYAML(data []byte) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var documents [][]byte
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return documents, nil
		}
		if err != nil {
			return documents, err
		}
		documents = append(documents, document)
	}
}

// ConvertObject converts one kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, or kubeflow.org/v2beta1 MPIJob, given as
// decoded from JSON or YAML into generic values; obj is not changed. Any
// other kind is an error.
func ConvertObject(obj map[string]interface{}) (Converted, error) {
	in, err := newObject(nil, obj)
	if err != nil {
		return Converted{}, err
	}
	if err := checkKind(in); err != nil {
		return Converted{}, err
	}
	kind := in.fields["kind"].(string)
	apiVersion := in.fields["apiVersion"].(string)
	in.take("apiVersion")
	in.take("kind")

	var w warnings
	meta, err := convertMetadata(in, &w)
	if err != nil {
		return Converted{}, err
	}
	spec, err := in.takeObject("spec")
	if err != nil {
		return Converted{}, err
	}
	var job runtime.Object
	switch kind {
	case tfJobKind:
		job, err = convertTFJob(meta, spec, &w)
	case pyTorchJobKind:
		job, err = convertPyTorchJob(meta, spec, &w)
	case xgboostJobKind:
		job, err = convertXGBoostJob(meta, spec, &w)
	case mpiJobKind:
		if apiVersion == mpiOperatorAPIVersion {
			job, err = convertMPIOperatorJob(meta, spec, &w)
		} else {
			job, err = convertMPIJob(meta, spec, &w)
		}
	}
	if err != nil {
		return Converted{}, err
	}
	if status, path, present := in.take("status"); present && !isEmpty(status) {
		w.add(path, "dropped: the status of a TensorStack job is written by its controller once the job runs")
	}
	in.reportLeftovers(&w)
	return Converted{Object: job, Warnings: w}, nil
}

// checkKind accepts the kinds that are converted and refuses any other,
// naming what it is.
func checkKind(in *object) error {
	apiVersion, _ := in.fields["apiVersion"].(string)
	kind, _ := in.fields["kind"].(string)
	if apiVersion == kubeflowAPIVersion && slices.Contains(convertedKinds, kind) ||
		apiVersion == mpiOperatorAPIVersion && kind == mpiJobKind {
		return nil
	}
	what := fmt.Sprintf("kind %q (apiVersion %q)", kind, apiVersion)
	if metadata, ok := in.fields["metadata"].(map[string]interface{}); ok {
		if name, ok := metadata["name"].(string); ok {
			what += fmt.Sprintf(" named %q", name)
		}
	}
	return fmt.Errorf("%s is not a %s %s, nor a %s %s", what, kubeflowAPIVersion, orList(convertedKinds), mpiOperatorAPIVersion, mpiJobKind)
}

// orList writes the items as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// typeMeta is the TypeMeta of our kind.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: kind}
}

// serverSetMetadata are the metadata fields the API server writes. They
// describe the Kubeflow object and mean nothing for a new job.
var serverSetMetadata = []string{
	"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
	"generation", "managedFields", "selfLink",
}

// convertMetadata takes the metadata a user writes; what the server wrote is
// dropped.
func convertMetadata(in *object, w *warnings) (metav1.ObjectMeta, error) {
	var meta metav1.ObjectMeta
	md, err := in.takeObject("metadata")
	if err != nil {
		return meta, err
	}
	for _, f := range []struct {
		key  string
		into *string
	}{{"name", &meta.Name}, {"generateName", &meta.GenerateName}, {"namespace", &meta.Namespace}} {
		if *f.into, _, err = md.takeString(f.key); err != nil {
			return meta, err
		}
	}
	if meta.Labels, err = md.takeStringMap("labels"); err != nil {
		return meta, err
	}
	if meta.Annotations, err = md.takeStringMap("annotations"); err != nil {
		return meta, err
	}
	if _, found := meta.Annotations[corev1.LastAppliedConfigAnnotation]; found {
		delete(meta.Annotations, corev1.LastAppliedConfigAnnotation)
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
		w.add(md.path.Child("annotations").Key(corev1.LastAppliedConfigAnnotation),
			"dropped: it records the Kubeflow manifest kubectl last applied; applying the converted job records it anew")
	}
	for _, key := range serverSetMetadata {
		md.take(key)
	}
	if value, path, present := md.take("ownerReferences"); present && !isEmpty(value) {
		w.notCarriedOver(path, "owner references name their owners by UID; set them again on the new job if it is to be deleted with its owner")
	}
	if value, path, present := md.take("finalizers"); present && !isEmpty(value) {
		w.notCarriedOver(path, "the finalizers belong to the controllers of the Kubeflow job")
	}
	md.reportLeftovers(w)
	return meta, nil
}

// isEmpty reports whether a value carries nothing: null, or an empty object,
// list or string.
func isEmpty(value interface{}) bool {
	switch v := value.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(v) == 0
	case []interface{}:
		return len(v) == 0
	case string:
		return v == ""
	}
	return false
}
