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
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The product's base image is made here rather than pulled: a static Go
// binary needs only the accounts of its user (Go's os/user and the kubelet's
// runAsNonRoot check read /etc/passwd), a writable /tmp and a resolver
// order. No shell, no package manager, no CA bundle (the servers trust only
// the CAs they are given).
const nonrootUser = "65532:65532"

// baseReference names the base in ko's annotations
// (org.opencontainers.image.base.name); it is not pullable, being made here.
var baseReference = name.MustParseReference("localhost/tensorstack/static-base:nonroot")

// baseFiles are the base layer's entries, in the order written.
var baseFiles = []struct {
	name     string
	mode     int64
	uid      int
	dir      bool
	contents string
}{
	{name: "etc/", mode: 0o755, dir: true},
	{name: "etc/group", mode: 0o644, contents: "root:x:0:\nnonroot:x:65532:\n"},
	{name: "etc/nsswitch.conf", mode: 0o644, contents: "hosts: files dns\n"},
	{name: "etc/passwd", mode: 0o644, contents: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
	{name: "home/", mode: 0o755, dir: true},
	{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
	{name: "root/", mode: 0o700, dir: true},
	{name: "tmp/", mode: 0o1777, dir: true},
}

func baseLayer() (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range baseFiles {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch, Format: tar.FormatPAX}
		if f.dir {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.contents))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// staticBase is an image index of the base for each platform ("os/arch" or
// "os/arch/variant").
func staticBase(platforms []string, created v1.Time) (v1.ImageIndex, error) {
	layer, err := baseLayer()
	if err != nil {
		return nil, err
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		parts := strings.Split(p, "/")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("platform %q: want os/arch or os/arch/variant", p)
		}
		platform := v1.Platform{OS: parts[0], Architecture: parts[1]}
		if len(parts) == 3 {
			platform.Variant = parts[2]
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
		cfg.Created = created
		cfg.Config.User = nonrootUser
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return index, nil
}
