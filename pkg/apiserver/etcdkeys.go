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
	"path"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Objects are stored under <prefix>/<group>/<resource>/<namespace>/<name>,
// the layout of kube-apiserver. Releases up to v0.1 had the group in the
// default prefix as well (--etcd-prefix=/registry/batch.tensorstack.dev),
// and so stored them under <prefix>/<group>/<group>/<resource>/...;
// migrateLegacyKeys moves such objects to where they belong.

// legacyKeyPrefix is where earlier releases stored the objects that now
// live under keyPrefix.
func legacyKeyPrefix(prefix string) string {
	return path.Join("/", prefix, batch.GroupName, batch.GroupName) + "/"
}

func keyPrefix(prefix string) string {
	return path.Join("/", prefix, batch.GroupName) + "/"
}

// migrationPageSize bounds how many objects a migration holds at once.
const migrationPageSize = 256

// migrateLegacyKeys moves every object stored under the legacy prefix to its
// key under the current one, before the server reads any. Each move is one
// transaction that also checks the old key is unchanged, so servers of
// either release running meanwhile lose nothing: when both keys hold the
// object, the one written last wins. It returns how many objects it moved.
func migrateLegacyKeys(ctx context.Context, client *clientv3.Client, prefix string) (int, error) {
	from, to := legacyKeyPrefix(prefix), keyPrefix(prefix)
	moved := 0
	start := from
	for {
		resp, err := client.Get(ctx, start, clientv3.WithRange(clientv3.GetPrefixRangeEnd(from)),
			clientv3.WithLimit(migrationPageSize))
		if err != nil {
			return moved, fmt.Errorf("listing %s: %w", from, err)
		}
		for _, kv := range resp.Kvs {
			oldKey := string(kv.Key)
			newKey := to + strings.TrimPrefix(oldKey, from)
			done, err := moveKey(ctx, client, oldKey, newKey)
			if err != nil {
				return moved, err
			}
			if done {
				moved++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return moved, nil
		}
		// Moved keys are gone; a key that could not be moved was changed
		// meanwhile and is taken again from here.
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// moveKey moves one object, retrying while either key changes under it. It
// reports whether the object at newKey is now the one from oldKey.
func moveKey(ctx context.Context, client *clientv3.Client, oldKey, newKey string) (bool, error) {
	for {
		resp, err := client.Txn(ctx).Then(clientv3.OpGet(oldKey), clientv3.OpGet(newKey)).Commit()
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", oldKey, err)
		}
		olds, news := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
		if len(olds) == 0 {
			return false, nil // moved or deleted meanwhile
		}
		old := olds[0]
		var newRev int64 // 0: absent, which the comparison below checks
		if len(news) > 0 {
			newRev = news[0].ModRevision
		}
		ops := []clientv3.Op{clientv3.OpDelete(oldKey)}
		keep := newRev > old.ModRevision // the current key was written last
		if !keep {
			ops = append([]clientv3.Op{clientv3.OpPut(newKey, string(old.Value))}, ops...)
		}
		txn, err := client.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(oldKey), "=", old.ModRevision),
			clientv3.Compare(clientv3.ModRevision(newKey), "=", newRev),
		).Then(ops...).Commit()
		if err != nil {
			return false, fmt.Errorf("moving %s to %s: %w", oldKey, newKey, err)
		}
		if txn.Succeeded {
			return !keep, nil
		}
	}
}

// migrateStorage runs migrateLegacyKeys on the server's etcd.
func migrateStorage(ctx context.Context, config storagebackend.Config) error {
	client, err := newEtcdClient(config.Transport)
	if err != nil {
		return err
	}
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	moved, err := migrateLegacyKeys(ctx, client, config.Prefix)
	if err != nil {
		return fmt.Errorf("moving objects stored by an earlier release: %w", err)
	}
	if moved > 0 {
		klog.InfoS("Moved objects stored by an earlier release to their current keys",
			"objects", moved, "from", legacyKeyPrefix(config.Prefix), "to", keyPrefix(config.Prefix))
	}
	return nil
}

// newEtcdClient connects to etcd as the storage does.
func newEtcdClient(c storagebackend.TransportConfig) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: c.ServerList, DialTimeout: 20 * time.Second}
	if c.CertFile != "" || c.KeyFile != "" || c.TrustedCAFile != "" {
		tlsInfo := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.TrustedCAFile}
		tlsConfig, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
		cfg.TLS = tlsConfig
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", c.ServerList, err)
	}
	return client, nil
}
