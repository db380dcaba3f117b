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

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"tensorstack.dev/training/pkg/apiserver"
)

// memberArgs are the restore flags of a member named as the embedded etcd
// of pkg/apiserver names itself, in dir.
func memberArgs(dir string) []string {
	peer := "unix://" + filepath.Join(dir, "peer.sock")
	return []string{"--data-dir=" + filepath.Join(dir, "data"), "--name=training-apiserver",
		"--initial-cluster=training-apiserver=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster-token=test"}
}

func client(t *testing.T, e *apiserver.EmbeddedEtcd) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRestore: a snapshot saved as etcdctl saves it comes back as a member
// that serves its keys, at a revision moved ahead; a member that has data
// is left alone.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	src, err := apiserver.StartEmbeddedEtcd(filepath.Join(t.TempDir(), "src"), apiserver.EmbeddedEtcdSettings{})
	if err != nil {
		t.Fatal(err)
	}
	put, err := client(t, src).Put(ctx, "/registry/batch.tensorstack.dev/pytorchtrainingjobs/ns/job", "stored")
	if err != nil {
		t.Fatal(err)
	}
	snapshotFile := filepath.Join(t.TempDir(), "backup.db")
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: []string{src.ClientURL}}, snapshotFile); err != nil {
		t.Fatal(err)
	}
	src.Close()

	dir := filepath.Join(t.TempDir(), "dst")
	// A new volume's directory exists and is empty.
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := runRestore(append(memberArgs(dir), "--snapshot="+snapshotFile), &log); err != nil {
		t.Fatalf("restore: %v\n%s", err, log.String())
	}
	dst, err := apiserver.StartEmbeddedEtcd(dir, apiserver.EmbeddedEtcdSettings{})
	if err != nil {
		t.Fatalf("starting the restored member: %v", err)
	}
	got, err := client(t, dst).Get(ctx, "/registry/batch.tensorstack.dev/pytorchtrainingjobs/ns/job")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "stored" {
		t.Fatalf("restored member: %v, want the key with value stored", got.Kvs)
	}
	if got.Header.Revision < put.Header.Revision+1_000_000_000 {
		t.Errorf("restored revision %d, want at least %d: clients must not see resourceVersions go back",
			got.Header.Revision, put.Header.Revision+1_000_000_000)
	}
	dst.Close()

	// Again, as a restarted pod runs it: the member keeps its data.
	log.Reset()
	if err := runRestore(append(memberArgs(dir), "--snapshot=/nonexistent/backup.db"), &log); err != nil {
		t.Fatalf("restore over a member: %v", err)
	}
	if !strings.Contains(log.String(), "already holds a member; not restoring") {
		t.Errorf("restore over a member said %q", log.String())
	}
}

func TestRestoreRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no snapshot flag", memberArgs(dir), "--snapshot is required"},
		{"no name", []string{"--snapshot=x", "--data-dir=" + dir}, "--name is required"},
		{"missing snapshot", append(memberArgs(dir), "--snapshot="+filepath.Join(dir, "none.db")), "the snapshot: "},
		{"not a snapshot", append(memberArgs(filepath.Join(dir, "m")), "--snapshot="+writeFile(t, dir, "junk.db", "junk")), "restoring "},
		{"files in the data directory", append(memberArgs(filepath.Join(dir, "used")), "--snapshot="+validSnapshot(t)),
			"holds files but no etcd member"},
		{"stray argument", append(memberArgs(dir), "--snapshot=x", "extra"), "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "files in the data directory" {
				writeFile(t, filepath.Join(dir, "used", "data"), "notes.txt", "someone's")
			}
			err := runRestore(tc.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "used", "data", "notes.txt")); err != nil {
		t.Errorf("a refused restore touched the files in the data directory: %v", err)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func validSnapshot(t *testing.T) string {
	t.Helper()
	e, err := apiserver.StartEmbeddedEtcd(filepath.Join(t.TempDir(), "e"), apiserver.EmbeddedEtcdSettings{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p := filepath.Join(t.TempDir(), "s.db")
	if _, err := snapshot.SaveWithVersion(context.Background(), zap.NewNop(), clientv3.Config{Endpoints: []string{e.ClientURL}}, p); err != nil {
		t.Fatal(err)
	}
	return p
}
