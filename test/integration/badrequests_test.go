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

package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	restclient "k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apiserver"
	"tensorstack.dev/training/pkg/registry/trainingjob"
	"tensorstack.dev/training/test/integration/framework"
)

// The hostile requests of a probe that once got 5xx, each with the 4xx it
// must get now: code, reason, message and field where there is one.

// TestRequestBodyOverLimit sends bodies over the 3 MiB limit straight at
// the server, over HTTP/2 and over HTTP/1.1, with and without a declared
// length: each gets 413 naming the limit, and promptly.
func TestRequestBodyOverLimit(t *testing.T) {
	s := framework.StartTestServer(t, "")
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("body").Create(context.Background(),
		tensorflowKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	base := s.Config.Host + jobPath("body", "", "")
	body := paddedJobJSON(t, "huge", 10*1024*1024)
	wantMessage := fmt.Sprintf("Request entity too large: limit is %d", apiserver.MaxRequestBodyBytes)

	http1 := restclient.CopyConfig(s.Config)
	http1.NextProtos = []string{"http/1.1"}
	for _, protocol := range []struct {
		name   string
		config *restclient.Config
	}{{"HTTP/2", s.Config}, {"HTTP/1.1", http1}} {
		client, err := restclient.HTTPClientFor(protocol.config)
		if err != nil {
			t.Fatal(err)
		}
		for _, request := range []struct{ method, url, contentType string }{
			{http.MethodPost, base, "application/json"},
			{http.MethodPut, base + "/train", "application/json"},
			{http.MethodPatch, base + "/train", "application/merge-patch+json"},
			{http.MethodPatch, base + "/train?fieldManager=probe", "application/apply-patch+yaml"},
			{http.MethodPost, base + "/train/pause", "application/json"},
			{http.MethodPost, base + "/train/progress", "application/json"},
		} {
			for _, declared := range []bool{true, false} {
				name := fmt.Sprintf("%s %s %s %s declared length %v", protocol.name, request.method, request.url, request.contentType, declared)
				var reader io.Reader = bytes.NewReader(body)
				if !declared {
					reader = io.MultiReader(reader) // hides the length: sent chunked
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				req, err := http.NewRequestWithContext(ctx, request.method, request.url, reader)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", request.contentType)
				code, status, err := doStatus(client, req)
				cancel()
				if err != nil {
					t.Errorf("%s: no answer: %v", name, err)
					continue
				}
				if code != http.StatusRequestEntityTooLarge || status.Reason != metav1.StatusReasonRequestEntityTooLarge || status.Message != wantMessage {
					t.Errorf("%s: %d %s %q, want 413 RequestEntityTooLarge %q", name, code, status.Reason, status.Message, wantMessage)
				}
			}
		}
	}
}

// TestRequestBodyOverLimitFromAWritingClient plays an HTTP/1.1 client such
// as curl: it writes its whole body before it reads the answer, or first
// asks whether to send it (Expect: 100-continue). Each gets the 413; before,
// the server closed the connection on the unread body and the client met
// a reset connection instead of an answer, or was invited to send the body
// with "100 Continue" only to be cut off.
func TestRequestBodyOverLimitFromAWritingClient(t *testing.T) {
	s := framework.StartTestServer(t, "")
	jobs := jobPath("body", "", "")
	body := paddedJobJSON(t, "huge", 10*1024*1024)
	wantMessage := fmt.Sprintf("Request entity too large: limit is %d", apiserver.MaxRequestBodyBytes)
	for _, tc := range []struct {
		name    string
		headers string
		chunked bool
	}{
		{"declared length", fmt.Sprintf("Content-Length: %d\r\n", len(body)), false},
		{"chunked", "Transfer-Encoding: chunked\r\n", true},
		{"declared length, asking first", fmt.Sprintf("Content-Length: %d\r\nExpect: 100-continue\r\n", len(body)), false},
		{"chunked, asking first", "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dialHTTP1(t, s)
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%s\r\n",
				jobs, conn.RemoteAddr(), s.Config.BearerToken, tc.headers)
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatalf("writing the request head: %v", err)
			}
			reader := bufio.NewReader(conn)
			if strings.Contains(tc.headers, "Expect:") {
				// The answer to the question comes before any body.
				resp, err := http.ReadResponse(reader, nil)
				if err != nil {
					t.Fatalf("no answer to Expect: %v", err)
				}
				if resp.StatusCode != http.StatusContinue {
					expectTooLargeResponse(t, resp, wantMessage)
					return
				}
			}
			if err := writeBody(conn, body, tc.chunked); err != nil {
				t.Fatalf("the connection broke while the body was sent: %v", err)
			}
			resp, err := http.ReadResponse(reader, nil)
			if err != nil {
				t.Fatalf("no answer after the body: %v", err)
			}
			expectTooLargeResponse(t, resp, wantMessage)
		})
	}
}

// dialHTTP1 opens a TLS connection to the server that speaks HTTP/1.1.
func dialHTTP1(t *testing.T, s *framework.TestServer) *tls.Conn {
	t.Helper()
	tlsConfig, err := restclient.TLSConfigFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig.NextProtos = []string{"http/1.1"}
	address := strings.TrimPrefix(s.Config.Host, "https://")
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", address, tlsConfig)
	if err != nil {
		t.Fatalf("dialing %s: %v", address, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn
}

func writeBody(w io.Writer, body []byte, chunked bool) error {
	if !chunked {
		_, err := w.Write(body)
		return err
	}
	const chunk = 256 * 1024
	for len(body) > 0 {
		n := min(len(body), chunk)
		if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", n, body[:n]); err != nil {
			return err
		}
		body = body[n:]
	}
	_, err := io.WriteString(w, "0\r\n\r\n")
	return err
}

func expectTooLargeResponse(t *testing.T, resp *http.Response, wantMessage string) {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	var status metav1.Status
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if err := json.Unmarshal(data, &status); err != nil {
		t.Fatalf("answer %d %q is no Status: %v", resp.StatusCode, data, err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || status.Reason != metav1.StatusReasonRequestEntityTooLarge || status.Message != wantMessage {
		t.Errorf("answer %d %s %q, want 413 RequestEntityTooLarge %q", resp.StatusCode, status.Reason, status.Message, wantMessage)
	}
}

// doStatus sends req and decodes the Status it is answered with.
func doStatus(client *http.Client, req *http.Request) (int, metav1.Status, error) {
	var status metav1.Status
	resp, err := client.Do(req)
	if err != nil {
		return 0, status, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, status, fmt.Errorf("reading the answer: %w", err)
	}
	if err := json.Unmarshal(data, &status); err != nil {
		return resp.StatusCode, status, fmt.Errorf("answer %q is no Status: %w", data, err)
	}
	return resp.StatusCode, status, nil
}

// paddedJobJSON is a valid job whose worker carries padding bytes of
// environment, split into values of 64 KiB, as a large configuration might.
func paddedJobJSON(t *testing.T, name string, padding int) []byte {
	t.Helper()
	data, err := json.Marshal(paddedJob(name, padding))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func paddedJob(name string, padding int) *v1beta1.TensorFlowTrainingJob {
	job := &v1beta1.TensorFlowTrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "TensorFlowTrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: replicaSpecs(v1beta1.TensorFlowContainerName, []v1beta1.ReplicaType{v1beta1.ReplicaTypeWorker}),
		}},
	}
	pad(job, padding)
	return job
}

func pad(job *v1beta1.TensorFlowTrainingJob, padding int) {
	const chunk = 64 * 1024
	container := &job.Spec.ReplicaSpecs[0].Template.Spec.Containers[0]
	container.Env = nil
	for i := 0; padding > 0; i++ {
		n := min(padding, chunk)
		container.Env = append(container.Env, corev1.EnvVar{Name: fmt.Sprintf("PAD_%d", i), Value: strings.Repeat("x", n)})
		padding -= n
	}
}

// paddedGenericJob is a valid GenericJob of padding bytes of environment
// spread evenly over 31 replica types, each template under the template
// limit (batch.MaxPodTemplateBytes) up to 3.9 MB in all: a job can only
// reach the storage limit with several large templates. The types are the
// same at every size, so that a job can grow.
func paddedGenericJob(name string, padding int) *v1beta1.GenericJob {
	job := &v1beta1.GenericJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "GenericJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	types := make([]v1beta1.ReplicaType, 31)
	for i := range types {
		types[i] = v1beta1.ReplicaType(fmt.Sprintf("t%d", i))
	}
	job.Spec.ReplicaSpecs = replicaSpecs("main", types)
	padGeneric(job, padding)
	return job
}

func padGeneric(job *v1beta1.GenericJob, padding int) {
	const chunk = 32 * 1024
	specs := job.Spec.ReplicaSpecs
	for i := range specs {
		container := &specs[i].Template.Spec.Containers[0]
		container.Env = nil
		left := padding / len(specs)
		for j := 0; left > 0; j++ {
			n := min(left, chunk)
			container.Env = append(container.Env, corev1.EnvVar{Name: fmt.Sprintf("PAD_%d", j), Value: strings.Repeat("x", n)})
			left -= n
		}
	}
}

// TestJobOverStorageLimit stores jobs around the size limit: one under it
// is kept, and one over it, created, updated, applied or in a dry run, gets
// 413 naming the limit (it used to be etcd's 500).
func TestJobOverStorageLimit(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().GenericJobs("size")
	wantLimit := fmt.Sprintf("more than the limit of %d bytes per job", trainingjob.MaxStoredObjectBytes)
	expectTooLarge := func(what string, err error) {
		t.Helper()
		if !apierrors.IsRequestEntityTooLargeError(err) || !strings.Contains(err.Error(), wantLimit) {
			t.Errorf("%s: %v, want 413 naming the limit (%q)", what, err, wantLimit)
		}
	}

	if _, err := client.Create(ctx, paddedGenericJob("under", 1400*1024), metav1.CreateOptions{}); err != nil {
		t.Errorf("a job of 1.4 MiB: %v, want it stored", err)
	}
	for _, size := range []int{1600 * 1024, 2900 * 1024} {
		_, err := client.Create(ctx, paddedGenericJob(fmt.Sprintf("over-%d", size), size), metav1.CreateOptions{})
		expectTooLarge(fmt.Sprintf("create of %d bytes", size), err)
	}
	_, err := client.Create(ctx, paddedGenericJob("dry", 1600*1024), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	expectTooLarge("dry-run create", err)

	job, err := client.Create(ctx, paddedGenericJob("grows", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	padGeneric(job, 1600*1024)
	_, err = client.Update(ctx, job, metav1.UpdateOptions{})
	expectTooLarge("update", err)
	_, err = client.Update(ctx, job, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	expectTooLarge("dry-run update", err)

	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"replicaSpecs": job.Spec.ReplicaSpecs}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Patch(ctx, "grows", types.MergePatchType, patch, metav1.PatchOptions{})
	expectTooLarge("merge patch", err)
	applied, err := json.Marshal(paddedGenericJob("grows", 1600*1024))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Patch(ctx, "grows", types.ApplyPatchType, applied, metav1.PatchOptions{FieldManager: "probe"})
	expectTooLarge("apply", err)

	stored, err := client.Get(ctx, "grows", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Generation != 1 {
		t.Errorf("refused writes changed the job: generation %d", stored.Generation)
	}
}

// TestApplyUnknownField applies configurations with fields the schema does
// not have: 400 naming the field, for a new job, an existing one and the
// status, whatever the field validation asked for (it used to be 500).
func TestApplyUnknownField(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("apply").Create(ctx, tensorflowKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	const worker = "  replicaSpecs:\n  - type: worker\n    template:\n      spec:\n        containers:\n        - name: tensorflow\n          image: tf:2\n"
	cases := []struct {
		name, job, subresource, validation, body, wantField, wantMessage string
	}{
		{"strict, existing job", "train", "", metav1.FieldValidationStrict, "spec:\n  bogus: 1\n" + worker, "spec.bogus", `unknown field "spec.bogus"`},
		{"strict, new job", "new", "", metav1.FieldValidationStrict, "spec:\n  bogus: 1\n" + worker, "spec.bogus", `unknown field "spec.bogus"`},
		{"strict, in a replica spec", "train", "", metav1.FieldValidationStrict, "spec:\n" + worker + "    bogus: 1\n", `spec.replicaSpecs[type="worker"].bogus`, `unknown field "spec.replicaSpecs[type=\"worker\"].bogus"`},
		{"strict, status", "train", "status", metav1.FieldValidationStrict, "status:\n  bogus: 1\n", "status.bogus", `unknown field "status.bogus"`},
		{"warn", "train", "", metav1.FieldValidationWarn, "spec:\n  bogus: 1\n" + worker, "spec.bogus", `unknown field "spec.bogus"`},
		{"ignore", "train", "", metav1.FieldValidationIgnore, "spec:\n  bogus: 1\n" + worker, "spec.bogus", `unknown field "spec.bogus"`},
		{"wrong type", "train", "", metav1.FieldValidationStrict, "spec:\n  replicaSpecs: 3\n", "", "spec.replicaSpecs: expected list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf("apiVersion: batch.tensorstack.dev/v1beta1\nkind: TensorFlowTrainingJob\nmetadata:\n  name: %s\n%s", tc.job, tc.body)
			err := restClient(t, s).Patch(types.ApplyPatchType).AbsPath(jobPath("apply", tc.job, tc.subresource)).
				Param("fieldManager", "probe").Param("fieldValidation", tc.validation).Body([]byte(body)).Do(ctx).Error()
			var status apierrors.APIStatus
			if !apierrors.IsBadRequest(err) || !errors.As(err, &status) {
				t.Fatalf("apply: %v, want 400 BadRequest", err)
			}
			wantPrefix := fmt.Sprintf("the applied configuration of TensorFlowTrainingJob %q does not fit its schema: ", tc.job)
			if message := status.Status().Message; !strings.HasPrefix(message, wantPrefix) || !strings.Contains(message, tc.wantMessage) {
				t.Errorf("message %q, want %q followed by %q", message, wantPrefix, tc.wantMessage)
			}
			if tc.wantField != "" && !hasCause(status.Status(), tc.wantField) {
				t.Errorf("causes %+v, want one naming %s", status.Status().Details, tc.wantField)
			}
		})
	}
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("apply").Get(ctx, "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused apply created the job: %v", err)
	}
}

// jobPath is the URL path of a TensorFlow job or of its subresource.
func jobPath(namespace, name, subresource string) string {
	return path.Join("/apis", v1beta1.SchemeGroupVersion.String(), "namespaces", namespace,
		v1beta1.TensorFlowTrainingJobResource, name, subresource)
}

// TestMalformedPatches sends patches that the patch libraries refuse or
// crash on: each gets its 4xx, with an answer (some were 500, and those
// that made a library panic got no answer).
func TestMalformedPatches(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("patches")
	if _, err := client.Create(ctx, tensorflowKind(s).newJob("train", "chief", "worker"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	noValue := func(operation string) string {
		return fmt.Sprintf(`operation 0 of the JSON patch, %s at "", has no value, which RFC 6902 requires`, operation)
	}
	const cannotApply = `the patch cannot be applied to TensorFlowTrainingJob "train": `
	cases := []struct {
		patchType   types.PatchType
		patch       string
		wantCode    int32
		wantMessage string
	}{
		{types.JSONPatchType, `[{"op":"replace","path":""}]`, http.StatusBadRequest, noValue("replace")},
		{types.JSONPatchType, `[{"op":"test","path":""}]`, http.StatusBadRequest, noValue("test")},
		{types.JSONPatchType, `[{"op":"add","path":""}]`, http.StatusBadRequest, noValue("add")},
		{types.JSONPatchType, `[{"op":"replace","path":"/spec/replicaSpecs/0/replicas","value":"x"}]`, http.StatusUnprocessableEntity, "cannot unmarshal string"},
		{types.MergePatchType, `{"spec":{"replicaSpecs":"x"}}`, http.StatusUnprocessableEntity, "cannot unmarshal string"},
		{types.StrategicMergePatchType, `{"$patch":"bogus"}`, http.StatusBadRequest, cannotApply + "unknown patch type: bogus"},
		{types.StrategicMergePatchType, `{"spec":{"replicaSpecs":[{"$patch":"bogus"}]}}`, http.StatusBadRequest, cannotApply + "unknown patch type: bogus"},
		{types.StrategicMergePatchType, `{"spec":{"replicaSpecs":[{"$patch":"delete"}]}}`, http.StatusBadRequest, cannotApply + "map: map[$patch:delete] does not contain declared merge key: type"},
		{types.StrategicMergePatchType, `{"spec":{"$setElementOrder/replicaSpecs":1}}`, http.StatusBadRequest, cannotApply + "expected a []interface {}"},
		{types.StrategicMergePatchType, `{"spec":{"$setElementOrder/replicaSpecs":[1]}}`, http.StatusBadRequest, cannotApply + "value for key 0 is not a map"},
		{types.StrategicMergePatchType, `{"spec":{"replicaSpecs":[1]}}`, http.StatusBadRequest, cannotApply + "list element types are not identical"},
		{types.StrategicMergePatchType, `{"$setElementOrder/metadata":[]}`, http.StatusBadRequest, cannotApply + "expected a []interface {}"},
		{types.StrategicMergePatchType, `{"spec":{"replicaSpecs":[{"type":{}}]}}`, http.StatusBadRequest,
			cannotApply + "the patch library failed on the patch: runtime error: comparing uncomparable type map[string]interface {}"},
		{types.StrategicMergePatchType, `{"spec":{"bogus":1}}`, http.StatusUnprocessableEntity, `unknown field "spec.bogus"`},
	}
	for _, tc := range cases {
		for _, subresource := range []string{"", "status"} {
			var subresources []string
			if subresource != "" {
				subresources = []string{subresource}
			}
			_, err := client.Patch(ctx, "train", tc.patchType, []byte(tc.patch), metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict}, subresources...)
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Errorf("%s %s to %q: %v, want an API error", tc.patchType, tc.patch, subresource, err)
				continue
			}
			if got := status.Status(); got.Code != tc.wantCode || !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("%s %s to %q: %d %q, want %d with %q", tc.patchType, tc.patch, subresource, got.Code, got.Message, tc.wantCode, tc.wantMessage)
			}
		}
	}
	job, err := client.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Generation != 1 {
		t.Errorf("refused patches changed the job: generation %d", job.Generation)
	}
}

func hasCause(status metav1.Status, field string) bool {
	if status.Details == nil {
		return false
	}
	for _, cause := range status.Details.Causes {
		if cause.Field == field {
			return true
		}
	}
	return false
}

// TestMalformedResourceVersion reads and writes with resourceVersions that
// are no numbers: 400 for get, list and watch (get and watch used to be
// 500), 422 naming metadata.resourceVersion for a write (it used to be 500),
// and the meta.k8s.io 422 for resourceVersionMatch without a version.
func TestMalformedResourceVersion(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("versions")
	job, err := client.Create(ctx, tensorflowKind(s).newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	for _, version := range []string{"abc", "-1", "1.5", "99999999999999999999"} {
		wantMessage := fmt.Sprintf("invalid resource version: resourceVersion: Invalid value: %q", version)
		reads := map[string]func() error{
			"get": func() error {
				_, err := client.Get(ctx, "train", metav1.GetOptions{ResourceVersion: version})
				return err
			},
			"list": func() error {
				_, err := client.List(ctx, metav1.ListOptions{ResourceVersion: version})
				return err
			},
			"list Exact": func() error {
				_, err := client.List(ctx, metav1.ListOptions{ResourceVersion: version, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				return err
			},
			"list NotOlderThan": func() error {
				_, err := client.List(ctx, metav1.ListOptions{ResourceVersion: version, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
				return err
			},
			"watch": func() error {
				w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: version})
				if err == nil {
					w.Stop()
				}
				return err
			},
			"watch with initial events": func() error {
				w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: version, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
					SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
				if err == nil {
					w.Stop()
				}
				return err
			},
			"status get": func() error {
				return restClient(t, s).Get().AbsPath(jobPath("versions", "train", "status")).
					Param("resourceVersion", version).Do(ctx).Error()
			},
			"delete collection": func() error {
				return client.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{ResourceVersion: version})
			},
		}
		for name, read := range reads {
			err := read()
			if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), wantMessage) {
				t.Errorf("%s at resourceVersion %q: %v, want 400 %q", name, version, err, wantMessage)
			}
		}

		writes := map[string]func() error{
			"update": func() error {
				changed := job.DeepCopy()
				changed.ResourceVersion = version
				_, err := client.Update(ctx, changed, metav1.UpdateOptions{})
				return err
			},
			"status update": func() error {
				changed := job.DeepCopy()
				changed.ResourceVersion = version
				_, err := client.UpdateStatus(ctx, changed, metav1.UpdateOptions{})
				return err
			},
			"merge patch": func() error {
				_, err := client.Patch(ctx, "train", types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"resourceVersion":%q}}`, version)), metav1.PatchOptions{})
				return err
			},
		}
		for name, write := range writes {
			expectInvalid(t, fmt.Sprintf("%s with resourceVersion %q", name, version), write(), "metadata.resourceVersion")
		}
	}

	_, err = client.List(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	expectInvalid(t, "list with resourceVersionMatch and no resourceVersion", err, "resourceVersionMatch")
	_, err = client.Watch(ctx, metav1.ListOptions{ResourceVersion: "abc", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	expectInvalid(t, "watch with resourceVersionMatch and without initial events", err, "resourceVersionMatch")
	_, err = client.List(ctx, metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Bogus"})
	expectInvalid(t, "list with an unknown resourceVersionMatch", err, "resourceVersionMatch")
}
