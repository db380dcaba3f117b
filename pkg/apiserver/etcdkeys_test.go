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
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

func TestMigrateLegacyKeys(t *testing.T) {
	etcd, err := StartEmbeddedEtcd(t.TempDir(), EmbeddedEtcdSettings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	client, err := newEtcdClient(storagebackend.TransportConfig{ServerList: []string{etcd.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	put := func(key, value string) {
		t.Helper()
		if _, err := client.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) (string, bool) {
		t.Helper()
		resp, err := client.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "", false
		}
		return string(resp.Kvs[0].Value), true
	}
	const (
		legacy  = "/registry/batch.tensorstack.dev/batch.tensorstack.dev/"
		current = "/registry/batch.tensorstack.dev/"
	)
	if got := legacyKeyPrefix(etcdPathPrefix); got != legacy {
		t.Fatalf("legacy prefix %q, want %q", got, legacy)
	}
	if got := keyPrefix(etcdPathPrefix); got != current {
		t.Fatalf("current prefix %q, want %q", got, current)
	}

	// More objects than a page, so paging is exercised.
	n := migrationPageSize + 44
	for i := range n {
		put(fmt.Sprintf("%stensorflowtrainingjobs/ns/job-%03d", legacy, i), fmt.Sprintf("tf-%d", i))
	}
	// Both keys hold an object: the one written last wins.
	put(current+"pytorchtrainingjobs/ns/newer", "current")
	put(legacy+"pytorchtrainingjobs/ns/newer", "legacy, written last")
	put(legacy+"pytorchtrainingjobs/ns/older", "legacy")
	put(current+"pytorchtrainingjobs/ns/older", "current, written last")
	// Not under the legacy prefix: left alone.
	put(current+"tensorflowtrainingjobs/ns/untouched", "current only")
	put("/registry/other/thing", "unrelated")

	moved, err := migrateLegacyKeys(ctx, client, etcdPathPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if want := n + 1; moved != want {
		t.Errorf("moved %d objects, want %d", moved, want)
	}
	for i := range n {
		if v, ok := get(fmt.Sprintf("%stensorflowtrainingjobs/ns/job-%03d", current, i)); !ok || v != fmt.Sprintf("tf-%d", i) {
			t.Errorf("job-%03d at its current key: %q (present %v)", i, v, ok)
		}
	}
	for key, want := range map[string]string{
		current + "pytorchtrainingjobs/ns/newer":        "legacy, written last",
		current + "pytorchtrainingjobs/ns/older":        "current, written last",
		current + "tensorflowtrainingjobs/ns/untouched": "current only",
		"/registry/other/thing":                         "unrelated",
	} {
		if v, ok := get(key); v != want {
			t.Errorf("%s = %q (present %v), want %q", key, v, ok, want)
		}
	}
	left, err := client.Get(ctx, legacy, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if left.Count != 0 {
		t.Errorf("%d keys left under the legacy prefix", left.Count)
	}

	// A second run (another replica starting) finds nothing to do.
	if moved, err := migrateLegacyKeys(ctx, client, etcdPathPrefix); err != nil || moved != 0 {
		t.Errorf("second run: moved %d, err %v", moved, err)
	}
}
