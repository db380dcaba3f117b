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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The annotations that name the image in an archive's index.json: the OCI
// one, and containerd's, which `ctr images import` reads.
const (
	refNameAnnotation        = "org.opencontainers.image.ref.name"
	containerdNameAnnotation = "io.containerd.image.name"
)

// writeArchive writes an image or an image index, named name, as an OCI
// archive at out (atomically: a temporary file renamed).
func writeArchive(out, name string, result any) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	annotations := layout.WithAnnotations(map[string]string{refNameAnnotation: name, containerdNameAnnotation: name})
	switch r := result.(type) {
	case v1.ImageIndex:
		err = path.AppendIndex(r, annotations)
	case v1.Image:
		err = path.AppendImage(r, annotations)
	default:
		err = fmt.Errorf("cannot write a %T", result)
	}
	if err != nil {
		return err
	}
	if err := tarTree(dir, out+".tmp", true); err != nil {
		os.Remove(out + ".tmp")
		return err
	}
	return os.Rename(out+".tmp", out)
}

// archiveContent is what an OCI archive holds: its name, and either an image
// index or an image. Close removes the unpacked layout.
type archiveContent struct {
	name  string
	index v1.ImageIndex
	image v1.Image
	dir   string
}

func (a *archiveContent) Close() error { return os.RemoveAll(a.dir) }

func (a *archiveContent) Digest() (v1.Hash, error) {
	if a.index != nil {
		return a.index.Digest()
	}
	return a.image.Digest()
}

// readArchive unpacks an OCI archive written by writeArchive into a
// temporary directory and opens what its index.json names.
func readArchive(archive string) (*archiveContent, error) {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return nil, err
	}
	content := &archiveContent{dir: dir}
	if err := untar(archive, dir); err != nil {
		content.Close()
		return nil, fmt.Errorf("unpacking %s: %w", archive, err)
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		content.Close()
		return nil, fmt.Errorf("%s is not an OCI archive: %w", archive, err)
	}
	manifest, err := root.IndexManifest()
	if err != nil {
		content.Close()
		return nil, err
	}
	if len(manifest.Manifests) != 1 {
		content.Close()
		return nil, fmt.Errorf("%s names %d images; this tool writes and reads archives of one", archive, len(manifest.Manifests))
	}
	desc := manifest.Manifests[0]
	content.name = desc.Annotations[refNameAnnotation]
	if desc.MediaType.IsIndex() {
		content.index, err = root.ImageIndex(desc.Digest)
	} else {
		content.image, err = root.Image(desc.Digest)
	}
	if err != nil {
		content.Close()
		return nil, err
	}
	return content, nil
}

// untar unpacks a tar of regular files and directories into dir, refusing
// any name that would leave it.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(hdr.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q leaves the archive", hdr.Name)
		}
		target := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: an OCI layout holds only files and directories", hdr.Name)
		}
	}
}
