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
	"bytes"
	"context"
	"mime"
	"net/http"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apiserver"
	"tensorstack.dev/training/test/integration/framework"
)

// protobufMagic starts every object the protobuf serializer writes.
var protobufMagic = []byte("k8s\x00")

// TestProtobufServed checks that a client asking only for protobuf gets it
// from get, list and watch, and that create and update accept it.
func TestProtobufServed(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	const namespace = "proto"
	rc := protobufClient(t, s)
	resource := v1beta1.TensorFlowTrainingJobResource

	created := &v1beta1.TensorFlowTrainingJob{}
	result := rc.Post().Namespace(namespace).Resource(resource).Body(tensorflowKind(s).newJob("train")).Do(ctx)
	expectProtobuf(t, "create", result)
	if err := result.Into(created); err != nil {
		t.Fatalf("create: %v", err)
	}

	created.Labels = map[string]string{"updated": "true"}
	updated := &v1beta1.TensorFlowTrainingJob{}
	result = rc.Put().Namespace(namespace).Resource(resource).Name(created.Name).Body(created).Do(ctx)
	expectProtobuf(t, "update", result)
	if err := result.Into(updated); err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Labels["updated"] != "true" {
		t.Errorf("update answered labels %v", updated.Labels)
	}

	got := &v1beta1.TensorFlowTrainingJob{}
	result = rc.Get().Namespace(namespace).Resource(resource).Name(created.Name).Do(ctx)
	expectProtobuf(t, "get", result)
	if err := result.Into(got); err != nil || got.UID != created.UID {
		t.Errorf("get: %v, uid %q, want %q", err, got.UID, created.UID)
	}

	list := &v1beta1.TensorFlowTrainingJobList{}
	result = rc.Get().Namespace(namespace).Resource(resource).Do(ctx)
	expectProtobuf(t, "list", result)
	if err := result.Into(list); err != nil || len(list.Items) != 1 {
		t.Errorf("list: %v, %d items, want 1", err, len(list.Items))
	}

	// The watch is read by hand: a REST client's watch takes whatever
	// encoding the server answers in without saying which.
	watchURL := rc.Get().Namespace(namespace).Resource(resource).Param("watch", "true").URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, watchURL.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", runtime.ContentTypeProtobuf)
	httpClient, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if mediaType, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil ||
		mediaType != runtime.ContentTypeProtobuf || params["stream"] != "watch" {
		t.Fatalf("watch answered %d with Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	info, _ := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	events := restclientwatch.NewDecoder(
		streaming.NewDecoder(info.StreamSerializer.NewFrameReader(resp.Body), info.StreamSerializer.Serializer),
		apiserver.Codecs.UniversalDeserializer())
	eventType, obj, err := events.Decode()
	if err != nil {
		t.Fatalf("reading the first watch event: %v", err)
	}
	if job, ok := obj.(*v1beta1.TensorFlowTrainingJob); eventType != watch.Added || !ok || job.UID != created.UID {
		t.Errorf("first watch event %s %#v, want ADDED of the job", eventType, obj)
	}
}

// TestProtobufPreferringClientsGetProtobuf lists and deletes jobs the way
// kube-controller-manager's namespace controller does: preferring protobuf,
// accepting JSON.
func TestProtobufPreferringClientsGetProtobuf(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("proto").Create(ctx, tensorflowKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	const accept = "application/vnd.kubernetes.protobuf, application/json"
	path := "/apis/batch.tensorstack.dev/v1beta1/namespaces/proto/tensorflowtrainingjobs"
	for _, verb := range []string{http.MethodGet, http.MethodDelete} {
		result := restClient(t, s).Verb(verb).AbsPath(path).SetHeader("Accept", accept).Do(ctx)
		expectProtobuf(t, verb, result)
		if raw, err := result.Raw(); err != nil || !bytes.Contains(raw, []byte("train")) {
			t.Errorf("%s %s: %v: %q", verb, path, err, raw)
		}
	}

	// The garbage collector reads jobs through the metadata client, which
	// asks for PartialObjectMetadata in protobuf.
	if _, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("proto").Create(ctx, tensorflowKind(s).newJob("owned"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	metadataClient, err := metadata.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	jobs := metadataClient.Resource(v1beta1.SchemeGroupVersion.WithResource(v1beta1.TensorFlowTrainingJobResource)).Namespace("proto")
	list, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "owned" {
		t.Errorf("metadata list: %v, %+v", err, list)
	}
	if job, err := jobs.Get(ctx, "owned", metav1.GetOptions{}); err != nil || job.UID == "" {
		t.Errorf("metadata get: %v, %+v", err, job)
	}
}

// TestJSONStoredJobsStayReadable writes jobs to etcd in JSON, as servers
// before protobuf storage did, and checks that they are served and that an
// update stores them in protobuf.
func TestJSONStoredJobsStayReadable(t *testing.T) {
	s := framework.StartTestServer(t, "")
	etcd := s.EtcdClient()
	bothKinds(t, s,
		func(t *testing.T, k kind[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]) {
			testJSONStoredJobStaysReadable(t, etcd, k)
		},
		func(t *testing.T, k kind[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]) {
			testJSONStoredJobStaysReadable(t, etcd, k)
		})
}

func testJSONStoredJobStaysReadable[J jobPointer, L any](t *testing.T, etcd *clientv3.Client, k kind[J, L]) {
	ctx := context.Background()
	const namespace = "legacy"
	client := k.client(namespace)

	// The JSON is what a server before protobuf storage wrote for a job
	// created through the API: the same object, in its storage codec.
	template, err := client.Create(ctx, k.newJob("template"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	templateKey := etcdKey(t, etcd, k.resource, namespace, template.GetName())
	stored := etcdValue(t, etcd, templateKey)
	if !bytes.HasPrefix(stored, protobufMagic) {
		t.Fatalf("a new job is stored as %.40q, want protobuf", stored)
	}
	obj, err := runtime.Decode(apiserver.Codecs.UniversalDecoder(), stored)
	if err != nil {
		t.Fatalf("decoding the stored job: %v", err)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	const name = "from-json"
	accessor.SetName(name)
	accessor.SetUID(uuid.NewUUID())
	legacy, err := runtime.Encode(apiserver.Codecs.LegacyCodec(v1beta1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored size of a job: JSON %d bytes, protobuf %d bytes", len(legacy), len(stored))
	key := strings.TrimSuffix(templateKey, template.GetName()) + name
	if _, err := etcd.Put(ctx, key, string(legacy)); err != nil {
		t.Fatalf("writing the JSON job: %v", err)
	}

	job, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get of the JSON job: %v", err)
	}
	if job.GetUID() != accessor.GetUID() || len(job.CommonSpec().ReplicaSpecs) != len(template.CommonSpec().ReplicaSpecs) {
		t.Errorf("get of the JSON job answered %#v", job)
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil || len(k.items(list)) != 2 {
		t.Errorf("list: %v, %d items, want 2", err, len(k.items(list)))
	}

	job.SetLabels(map[string]string{"updated": "true"})
	if _, err := client.Update(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update of the JSON job: %v", err)
	}
	rewritten := etcdValue(t, etcd, key)
	if !bytes.HasPrefix(rewritten, protobufMagic) {
		t.Fatalf("after an update the job is stored as %.40q, want protobuf", rewritten)
	}
	obj, err = runtime.Decode(apiserver.Codecs.UniversalDecoder(), rewritten)
	if err != nil {
		t.Fatalf("decoding the updated job: %v", err)
	}
	if accessor, err := meta.Accessor(obj); err != nil || accessor.GetLabels()["updated"] != "true" {
		t.Errorf("the updated job is stored without its label: %#v", obj)
	}
}

// protobufClient asks for and sends nothing but protobuf.
func protobufClient(t *testing.T, s *framework.TestServer) *rest.RESTClient {
	t.Helper()
	config := rest.CopyConfig(s.Config)
	config.GroupVersion = &v1beta1.SchemeGroupVersion
	config.APIPath = "/apis"
	config.NegotiatedSerializer = apiserver.Codecs.WithoutConversion()
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf
	rc, err := rest.RESTClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func expectProtobuf(t *testing.T, what string, result rest.Result) {
	t.Helper()
	var contentType string
	result.ContentType(&contentType)
	if mediaType, _, err := mime.ParseMediaType(contentType); err != nil || mediaType != runtime.ContentTypeProtobuf {
		raw, err := result.Raw()
		t.Errorf("%s answered %q: %v: %.200q", what, contentType, err, raw)
	}
}

// etcdKey finds the key a job is stored under without assuming the server's
// key layout.
func etcdKey(t *testing.T, etcd *clientv3.Client, resource, namespace, name string) string {
	t.Helper()
	resp, err := etcd.Get(context.Background(), "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("listing etcd keys: %v", err)
	}
	suffix := "/" + namespace + "/" + name
	for _, kv := range resp.Kvs {
		if key := string(kv.Key); strings.Contains(key, resource) && strings.HasSuffix(key, suffix) {
			return key
		}
	}
	t.Fatalf("no etcd key for %s %s/%s", resource, namespace, name)
	return ""
}

func etcdValue(t *testing.T, etcd *clientv3.Client, key string) []byte {
	t.Helper()
	resp, err := etcd.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s from etcd: %v, %d values", key, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}
