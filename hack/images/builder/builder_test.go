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
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestStaticBase: one image per platform, each running as the non-root user
// its /etc/passwd names, with nothing to run but what is added on top.
func TestStaticBase(t *testing.T) {
	created := v1.Time{Time: time.Unix(1700000000, 0).UTC()}
	index, err := staticBase([]string{"linux/amd64", "linux/arm64"}, created)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(manifest.Manifests))
	}
	for i, arch := range []string{"amd64", "arm64"} {
		desc := manifest.Manifests[i]
		if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != arch {
			t.Errorf("manifest %d is for %v, want linux/%s", i, desc.Platform, arch)
		}
		img, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != arch || cfg.Config.User != "65532:65532" || !cfg.Created.Equal(created.Time) {
			t.Errorf("linux/%s: config architecture %q, user %q, created %v", arch, cfg.Architecture, cfg.Config.User, cfg.Created)
		}
		files := imageFiles(t, img)
		if files["etc/passwd"] == "" || files["tmp"] != "dir" {
			t.Errorf("linux/%s: the base lacks /etc/passwd or /tmp: %v", arch, files)
		}
		for name := range files {
			if name == "bin/sh" || name == "bin" {
				t.Errorf("linux/%s: the base has %s; it is to have no shell", arch, name)
			}
		}
	}
	if _, err := staticBase([]string{"amd64"}, created); err == nil {
		t.Error("a platform without an OS was taken")
	}
}

// TestArchiveRoundTrip: an image written twice from the same files is the
// same archive, byte for byte, and reads back with its name and digest.
func TestArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "hello"), []byte("#!hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var digests []v1.Hash
	var archives [][]byte
	for i, out := range []string{filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")} {
		if i == 1 {
			// A later modification time must not change the image.
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(root, "bin", "hello"), later, later); err != nil {
				t.Fatal(err)
			}
		}
		if err := layeredImage([]string{"-name", "localhost/test/hello:v1", "-layer", root, "-entrypoint", "/bin/hello", "-out", out}); err != nil {
			t.Fatal(err)
		}
		content, err := readArchive(out)
		if err != nil {
			t.Fatal(err)
		}
		if content.name != "localhost/test/hello:v1" || content.image == nil {
			t.Errorf("read back %q (image %v), want localhost/test/hello:v1", content.name, content.image != nil)
		}
		d, err := content.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
		content.Close()
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
	}
	if digests[0] != digests[1] || string(archives[0]) != string(archives[1]) {
		t.Errorf("the same files gave two images: %s and %s", digests[0], digests[1])
	}
}

// TestReadArchiveRefusesEscapes: a tar entry that leaves the directory it
// is unpacked into is an error, not a write elsewhere.
func TestReadArchiveRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "bad.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "../escaped", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	f.Close()
	if _, err := readArchive(archive); err == nil {
		t.Error("an archive with ../escaped was read")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("../escaped was written: %v", err)
	}
}

// imageFiles lists an image's files, "dir" for directories and the contents
// of regular files.
func imageFiles(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeDir {
			files[hdr.Name] = "dir"
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = string(data)
	}
}
