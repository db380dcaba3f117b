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
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// TestEmbeddedEtcdStartsCompactedAndDefragmented: what a previous run
// deleted no longer takes space once the embedded etcd starts again, and
// what it kept is all there.
func TestEmbeddedEtcdStartsCompactedAndDefragmented(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	value := strings.Repeat("x", 4096)

	etcd, err := StartEmbeddedEtcd(dir, EmbeddedEtcdSettings{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	client, err := newEtcdClient(storagebackend.TransportConfig{ServerList: []string{etcd.ClientURL}})
	if err != nil {
		etcd.Close()
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := client.Put(ctx, fmt.Sprintf("/gone/%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Delete(ctx, "/gone/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, "/kept", "v"); err != nil {
		t.Fatal(err)
	}
	etcd.etcd.Server.Backend().ForceCommit()
	before := etcd.etcd.Server.Backend().Size()
	lastRev := etcd.etcd.Server.KV().Rev()
	_ = client.Close()
	etcd.Close()

	etcd, err = StartEmbeddedEtcd(dir, EmbeddedEtcdSettings{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	after := etcd.etcd.Server.Backend().Size()
	if after > before/4 {
		t.Errorf("database of %d bytes after the restart, %d before: not defragmented", after, before)
	}
	if rev := etcd.etcd.Server.KV().Rev(); rev < lastRev {
		t.Errorf("revision %d after the restart, %d before", rev, lastRev)
	}
	client, err = newEtcdClient(storagebackend.TransportConfig{ServerList: []string{etcd.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	resp, err := client.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != "/kept" || string(resp.Kvs[0].Value) != "v" {
		t.Errorf("after the restart etcd holds %v, want only /kept", resp.Kvs)
	}
	t.Logf("database %d bytes before the restart, %d after", before, after)
}
