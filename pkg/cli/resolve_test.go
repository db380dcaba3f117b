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

package cli

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
)

// The kinds the tests name, found as the commands find them.
var (
	tensorFlowKind = mustKindNamed("tj")
	pyTorchKind    = mustKindNamed("pj")
	xgboostKind    = mustKindNamed("xj")
)

func mustKindNamed(word string) *jobKind {
	k, ok := kindNamed(word)
	if !ok {
		panic(word + " names no kind")
	}
	return k
}

func TestParseJobArg(t *testing.T) {
	for _, tc := range []struct {
		arg      string
		wantKind *jobKind
		wantName string
	}{
		{"tj/mnist", tensorFlowKind, "mnist"},
		{"pj/resnet", pyTorchKind, "resnet"},
		{"tensorflowtrainingjob/mnist", tensorFlowKind, "mnist"},
		{"tensorflowtrainingjobs/mnist", tensorFlowKind, "mnist"},
		{"TensorFlowTrainingJob/mnist", tensorFlowKind, "mnist"},
		{"pytorchtrainingjob.batch.tensorstack.dev/resnet", pyTorchKind, "resnet"},
		{"pytorchtrainingjobs.v1beta1.batch.tensorstack.dev/resnet", pyTorchKind, "resnet"},
		{"PJ/resnet", pyTorchKind, "resnet"},
		{"xj/higgs", xgboostKind, "higgs"},
		{"xgboosttrainingjobs.batch.tensorstack.dev/higgs", xgboostKind, "higgs"},
		{"resnet", nil, "resnet"},
	} {
		kind, name, err := parseJobArg(tc.arg)
		if err != nil || kind != tc.wantKind || name != tc.wantName {
			t.Errorf("parseJobArg(%q) = %v, %q, %v; want %v, %q", tc.arg, kind, name, err, tc.wantKind, tc.wantName)
		}
	}
}

func TestParseJobArgErrors(t *testing.T) {
	for _, tc := range []struct {
		arg, wantErr string
	}{
		{"deploy/x", `"deploy" is not a training job kind in "deploy/x": ` + "use " + everyKindRef()},
		{"pj.apps/x", `"pj.apps" is not a training job kind`},
		{"tensorflowtrainingjobs.kubeflow.org/x", `"tensorflowtrainingjobs.kubeflow.org" is not a training job kind`},
		{"tj/", `"tj/" is not a job: ` + "name one as " + everyShortRef()},
		{"", `"" is not a job`},
		{"tj/a/b", `"tj/a/b" is not a job`},
		{"tj/Bad_Name", `"Bad_Name" is not a job name`},
	} {
		_, _, err := parseJobArg(tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("parseJobArg(%q) error = %v; want one containing %q", tc.arg, err, tc.wantErr)
		}
	}
}

func TestFindJob(t *testing.T) {
	client := fake.NewSimpleClientset(
		tfJob("mnist", replicas("worker", 1, "tensorflow")),
		ptJob("resnet", replicas("master", 1, "pytorch")),
		tfJob("twin", replicas("worker", 1, "tensorflow")),
		ptJob("twin", replicas("master", 1, "pytorch")),
	)
	ctx := context.Background()

	for arg, want := range map[string]string{
		"mnist": "tj/mnist", "resnet": "pj/resnet", "tj/twin": "tj/twin", "pytorchtrainingjob/twin": "pj/twin",
	} {
		found, err := findJob(ctx, client, "default", arg)
		if err != nil || found.Ref() != want || found.job.GetName() == "" {
			t.Errorf("findJob(%q) = %v, %v; want %s", arg, found.Ref(), err, want)
		}
	}

	_, err := findJob(ctx, client, "default", "twin")
	if want := `"twin" is ambiguous in namespace "default": tj/twin and pj/twin exist; name one of them`; err == nil || err.Error() != want {
		t.Errorf("ambiguous name: error %v; want %q", err, want)
	}

	_, err = findJob(ctx, client, "default", "missing")
	if want := "no " + everyKind() + " named " + `"missing" in namespace "default"`; !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("missing name: error %v; want NotFound %q", err, want)
	}

	// Names are looked up in the namespace only.
	_, err = findJob(ctx, client, "other", "mnist")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespace "other"`) {
		t.Errorf("name in another namespace: error %v; want NotFound naming the namespace", err)
	}

	_, err = findJob(ctx, client, "default", "pj/mnist")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `getting pj/mnist in namespace "default"`) {
		t.Errorf("wrong kind: error %v; want NotFound for pj/mnist", err)
	}
}
