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

// Command ociarchive writes a container image as an OCI image layout in one
// tar file, which `ctr images import` loads: no daemon, no registry. Each
// layer is a directory (tarred here, in a fixed order with fixed times, so
// the same files give the same digest) or a tar file made earlier.
//
//	ociarchive -name localhost/tensorstack/pause:v1 -layer DIR -entrypoint /pause -out pause.tar
//	ociarchive -layer-only -layer ROOTFS -out base.tar   # a layer to reuse
package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// epoch is every file's time in a layer made from a directory.
var epoch = time.Unix(0, 0).UTC()

func main() {
	var layers, env, entrypoint, cmd listFlag
	name := flag.String("name", "", "the image reference, e.g. localhost/tensorstack/pause:v1")
	out := flag.String("out", "", "the archive to write")
	workdir := flag.String("workdir", "", "the working directory of the image's processes")
	flag.Var(&layers, "layer", "a layer: a directory, or a .tar file (repeat, lowest first)")
	flag.Var(&env, "env", "KEY=VALUE in the image's environment (repeat)")
	flag.Var(&entrypoint, "entrypoint", "one word of the entrypoint (repeat)")
	flag.Var(&cmd, "cmd", "one word of the default arguments (repeat)")
	layerOnly := flag.Bool("layer-only", false, "write only the one -layer directory as a layer tar to -out, to be given as a layer later")
	flag.Parse()
	if *layerOnly {
		if len(layers) != 1 || *out == "" {
			fmt.Fprintln(os.Stderr, "ociarchive: -layer-only takes one -layer directory and -out")
			os.Exit(2)
		}
		if err := tarDirectory(layers[0], *out+".tmp"); err != nil {
			fmt.Fprintln(os.Stderr, "ociarchive:", err)
			os.Exit(1)
		}
		if err := os.Rename(*out+".tmp", *out); err != nil {
			fmt.Fprintln(os.Stderr, "ociarchive:", err)
			os.Exit(1)
		}
		return
	}
	if *name == "" || *out == "" || len(layers) == 0 {
		fmt.Fprintln(os.Stderr, "ociarchive: -name, -out and at least one -layer are required")
		os.Exit(2)
	}
	if err := write(*out, *name, layers, imageConfig{Env: env, Entrypoint: entrypoint, Cmd: cmd, WorkingDir: *workdir}); err != nil {
		fmt.Fprintln(os.Stderr, "ociarchive:", err)
		os.Exit(1)
	}
}

type imageConfig struct {
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// blob is content of the layout: in memory, or in a file.
type blob struct {
	descriptor
	data []byte
	path string
}

func jsonBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	sum := sha256.Sum256(data)
	return blob{descriptor: descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}, data: data}, nil
}

func write(out, name string, layers []string, config imageConfig) error {
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".ociarchive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var layerBlobs []blob
	var diffIDs []string
	for i, layer := range layers {
		b, err := layerBlob(layer, filepath.Join(tmp, fmt.Sprintf("layer-%d.tar", i)))
		if err != nil {
			return fmt.Errorf("layer %s: %w", layer, err)
		}
		layerBlobs = append(layerBlobs, b)
		diffIDs = append(diffIDs, b.Digest) // uncompressed: the diff ID is the digest
	}
	configBlob, err := jsonBlob("application/vnd.oci.image.config.v1+json", map[string]any{
		"architecture": "amd64", "os": "linux", "config": config,
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	layerDescriptors := make([]descriptor, len(layerBlobs))
	for i, b := range layerBlobs {
		layerDescriptors[i] = b.descriptor
	}
	manifestBlob, err := jsonBlob("application/vnd.oci.image.manifest.v1+json", map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": configBlob.descriptor, "layers": layerDescriptors,
	})
	if err != nil {
		return err
	}
	manifest := manifestBlob.descriptor
	manifest.Annotations = map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []descriptor{manifest},
	})
	if err != nil {
		return err
	}

	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	files := []blob{
		{descriptor: descriptor{Size: int64(len(`{"imageLayoutVersion":"1.0.0"}`))}, data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{descriptor: descriptor{Size: int64(len(index))}, data: index},
	}
	names := []string{"oci-layout", "index.json"}
	for _, b := range append(append(layerBlobs, configBlob), manifestBlob) {
		files = append(files, b)
		names = append(names, "blobs/sha256/"+strings.TrimPrefix(b.Digest, "sha256:"))
	}
	for _, dir := range []string{"blobs", "blobs/sha256"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for i, b := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: names[i], Mode: 0o644, Size: b.Size, ModTime: epoch}); err != nil {
			return err
		}
		if b.path == "" {
			_, err = tw.Write(b.data)
		} else {
			err = copyFile(tw, b.path)
		}
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// layerBlob returns the layer as a blob: a tar file as it is, or a
// directory tarred into scratch.
func layerBlob(layer, scratch string) (blob, error) {
	info, err := os.Stat(layer)
	if err != nil {
		return blob{}, err
	}
	path := layer
	if info.IsDir() {
		if err := tarDirectory(layer, scratch); err != nil {
			return blob{}, err
		}
		path = scratch
	}
	f, err := os.Open(path)
	if err != nil {
		return blob{}, err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return blob{}, err
	}
	return blob{descriptor: descriptor{
		MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: size,
	}, path: path}, nil
}

// tarDirectory writes the tree under root as a layer: paths relative to
// root in lexical order, owners and modes kept, times fixed, hard links as
// links. The contents of dev, proc and sys are left out: the runtime
// mounts its own there.
func tarDirectory(root, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	var paths []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		paths = append(paths, rel)
		if d.IsDir() && (rel == "dev" || rel == "proc" || rel == "sys") {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, rel := range paths {
		path := filepath.Join(root, rel)
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		if info.Mode()&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
			continue
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
			if info.Mode().IsRegular() && st.Nlink > 1 {
				key := inode{uint64(st.Dev), st.Ino}
				if first, ok := seen[key]; ok {
					hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				} else {
					seen[key] = hdr.Name
				}
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := copyFile(tw, path); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
