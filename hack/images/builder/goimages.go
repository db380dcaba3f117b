//go:build !noko

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
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/ko/pkg/build"
)

// goImages builds each IMPORT_PATH=NAME argument, a Go command of the module
// in -dir, into an image index with one image per platform, and writes it
// as NAME.tar under -out. It prints one line per image: its name, reference
// and digest.
func goImages(args []string) error {
	fs := flag.NewFlagSet("go", flag.ContinueOnError)
	dir := fs.String("dir", ".", "the Go module the commands are in")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms, comma-separated")
	repository := fs.String("repository", "ghcr.io/tensorstack", "where the images are to be published; names them in the archives")
	tag := fs.String("tag", "", "the images' tag, and their org.opencontainers.image.version")
	revision := fs.String("revision", "", "the source revision, for org.opencontainers.image.revision")
	source := fs.String("source", "https://github.com/tensorstack/training", "the source, for org.opencontainers.image.source")
	epochSeconds := fs.Int64("epoch", 0, "the images' creation time, seconds since 1970 (the commit time makes rebuilds identical)")
	out := fs.String("out", "", "the directory to write NAME.tar into")
	var ldflags listFlag
	fs.Var(&ldflags, "ldflag", "one word of the Go linker flags (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tag == "" || *out == "" || fs.NArg() == 0 {
		return errors.New("-tag, -out and at least one IMPORT_PATH=NAME are required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	created := v1.Time{Time: time.Unix(*epochSeconds, 0).UTC()}
	wanted := strings.Split(*platforms, ",")
	base, err := staticBase(wanted, created)
	if err != nil {
		return fmt.Errorf("the base image: %w", err)
	}
	ctx := context.Background()
	options := []build.Option{
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) {
			return baseReference, base, nil
		}),
		build.WithPlatforms(wanted...),
		build.WithCreationTime(created),
		build.WithKoDataCreationTime(created),
		build.WithTrimpath(true),
		build.WithDefaultLdflags(ldflags),
		build.WithDisabledSBOM(),
		build.WithUser(nonrootUser),
		// One compile at a time: each uses every core already.
		build.WithJobs(1),
		build.WithLabel("org.opencontainers.image.source", *source),
		build.WithLabel("org.opencontainers.image.version", *tag),
		build.WithLabel("org.opencontainers.image.revision", *revision),
		build.WithAnnotation("org.opencontainers.image.source", *source),
		build.WithAnnotation("org.opencontainers.image.version", *tag),
		build.WithAnnotation("org.opencontainers.image.revision", *revision),
	}
	builder, err := build.NewGo(ctx, *dir, options...)
	if err != nil {
		return err
	}
	for _, arg := range fs.Args() {
		importPath, imageName, ok := strings.Cut(arg, "=")
		if !ok || imageName == "" {
			return fmt.Errorf("%q: want IMPORT_PATH=NAME", arg)
		}
		ref := *repository + "/" + imageName + ":" + *tag
		if _, err := name.ParseReference(ref); err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		start := time.Now()
		qualified, err := builder.QualifyImport(importPath)
		if err != nil {
			return err
		}
		if err := builder.IsSupportedReference(qualified); err != nil {
			return fmt.Errorf("%s: %w", importPath, err)
		}
		result, err := builder.Build(ctx, qualified)
		if err != nil {
			return fmt.Errorf("building %s: %w", importPath, err)
		}
		index, err := asIndex(result)
		if err != nil {
			return fmt.Errorf("building %s: %w", importPath, err)
		}
		if err := writeArchive(filepath.Join(*out, imageName+".tar"), ref, index); err != nil {
			return err
		}
		digest, err := index.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%s\n", imageName, ref, digest)
		fmt.Fprintf(os.Stderr, "builder go: %s for %s in %s\n", ref, *platforms, time.Since(start).Round(time.Second))
	}
	return nil
}

// asIndex returns ko's result as an image index: ko gives a lone image when
// one platform is asked for, and the release's archives are indexes
// whatever the platforms.
func asIndex(result build.Result) (v1.ImageIndex, error) {
	switch r := result.(type) {
	case v1.ImageIndex:
		return r, nil
	case v1.Image:
		cfg, err := r.ConfigFile()
		if err != nil {
			return nil, err
		}
		platform := cfg.Platform()
		index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		return mutate.AppendManifests(index, mutate.IndexAddendum{Add: r, Descriptor: v1.Descriptor{Platform: platform}}), nil
	}
	return nil, fmt.Errorf("ko gave a %T, neither an image nor an index", result)
}
