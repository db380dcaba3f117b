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

// Command builder makes the project's container images without a Docker
// daemon, with ko's build library and go-containerregistry:
//
//	builder go      the product's images: each Go command built by ko for
//	                every platform asked, on a static non-root base, as one
//	                image index in an OCI archive
//	builder image   an image from layers (directories or layer tars) and a
//	                config: the local stack's pause and training images
//	builder layer   one directory as a layer tar, to pass to image -layer
//	builder push    an OCI archive to a registry; the digest does not change
//	builder digest  the digest of an OCI archive's image or index
//
// Built with -tags noko, it leaves out ko and its go command: the local
// stack's images need none of it, and ko is most of what the builder compiles.
//
// An OCI archive here is an OCI image layout in a tar file, whose index.json
// names one image or index (annotations org.opencontainers.image.ref.name
// and io.containerd.image.name, so `ctr images import` takes it as it is).
// Everything written is reproducible: the same inputs give the same bytes.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	commands := map[string]func([]string) error{
		"go":     goImages,
		"image":  layeredImage,
		"layer":  layerTar,
		"push":   push,
		"digest": digest,
	}
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: builder go|image|layer|push|digest [flags] (builder COMMAND -h for its flags)")
		os.Exit(2)
	}
	if err := commands[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "builder %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// listFlag is a flag given once per value (-layer, -env, -platforms, ...).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
