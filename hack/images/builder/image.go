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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layeredImage writes an image of the machine's platform from -layer
// directories or layer tars, lowest first, as an OCI archive.
func layeredImage(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	imageName := fs.String("name", "", "the image reference, e.g. localhost/tensorstack/pause:v1")
	out := fs.String("out", "", "the OCI archive to write")
	workdir := fs.String("workdir", "", "the working directory of the image's processes")
	user := fs.String("user", "", "the user the image's processes run as, e.g. 65532:65532")
	var layers, env, entrypoint, cmd listFlag
	fs.Var(&layers, "layer", "a layer: a directory, or a tar file (repeat, lowest first)")
	fs.Var(&env, "env", "KEY=VALUE in the image's environment (repeat)")
	fs.Var(&entrypoint, "entrypoint", "one word of the entrypoint (repeat)")
	fs.Var(&cmd, "cmd", "one word of the default arguments (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *imageName == "" || *out == "" || len(layers) == 0 {
		return errors.New("-name, -out and at least one -layer are required")
	}
	scratch, err := os.MkdirTemp(filepath.Dir(*out), ".layers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i, path := range layers {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if info.IsDir() {
			tarPath := filepath.Join(scratch, fmt.Sprintf("layer-%d.tar", i))
			if err := tarTree(path, tarPath, false); err != nil {
				return fmt.Errorf("layer %s: %w", path, err)
			}
			path = tarPath
		}
		layer, err := newUncompressedLayer(path)
		if err != nil {
			return fmt.Errorf("layer %s: %w", path, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return err
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Env, cfg.Config.Entrypoint, cfg.Config.Cmd = env, entrypoint, cmd
	cfg.Config.WorkingDir, cfg.Config.User = *workdir, *user
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return writeArchive(*out, *imageName, img)
}

// layerTar writes one directory as a layer tar (owners kept), for a later
// `image -layer`: a root file system that takes minutes to make is tarred
// once and cached.
func layerTar(args []string) error {
	fs := flag.NewFlagSet("layer", flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory")
	out := fs.String("out", "", "the tar file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *out == "" {
		return errors.New("-dir and -out are required")
	}
	if err := tarTree(*dir, *out+".tmp", false); err != nil {
		os.Remove(*out + ".tmp")
		return err
	}
	return os.Rename(*out+".tmp", *out)
}

// uncompressedLayer is a layer tar on disk stored as it is: the training
// image's root file system is 1.4 GB, compressing it would cost more time
// than the local registry and containerd save by it. Its digest is its diff
// ID.
type uncompressedLayer struct {
	path   string
	digest v1.Hash
	size   int64
}

func newUncompressedLayer(path string) (*uncompressedLayer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	return &uncompressedLayer{path: path, size: size, digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}}, nil
}

func (l *uncompressedLayer) Digest() (v1.Hash, error) { return l.digest, nil }
func (l *uncompressedLayer) DiffID() (v1.Hash, error) { return l.digest, nil }
func (l *uncompressedLayer) Size() (int64, error)     { return l.size, nil }
func (l *uncompressedLayer) MediaType() (types.MediaType, error) {
	return types.OCIUncompressedLayer, nil
}
func (l *uncompressedLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *uncompressedLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
