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
	"errors"
	"flag"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push sends an OCI archive's image or index to -to (REGISTRY/REPOSITORY[:TAG];
// the archive's own tag when none is given). Manifests are pushed byte for
// byte, so the digest in the registry is the archive's: a release's
// install.yaml, which names images by digest, works against any registry
// its images are pushed to. Credentials come from the Docker config, as for
// docker and crane.
func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	archive := fs.String("archive", "", "the OCI archive")
	to := fs.String("to", "", "REGISTRY/REPOSITORY[:TAG] to push to")
	insecure := fs.Bool("insecure", false, "talk plain HTTP to the registry (ggcr does already for localhost and 127.0.0.1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *archive == "" || *to == "" {
		return errors.New("-archive and -to are required")
	}
	content, err := readArchive(*archive)
	if err != nil {
		return err
	}
	defer content.Close()
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(*to, opts...)
	if err != nil {
		return err
	}
	if tag, ok := ref.(name.Tag); ok && tag.TagStr() == "latest" {
		if own, err := name.ParseReference(content.name); err == nil {
			if ownTag, ok := own.(name.Tag); ok {
				ref = tag.Context().Tag(ownTag.TagStr())
			}
		}
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if content.index != nil {
		err = remote.WriteIndex(ref, content.index, auth)
	} else {
		err = remote.Write(ref, content.image, auth)
	}
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	d, err := content.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref.Context(), d)
	return nil
}

// digest prints the digest of an OCI archive's image or index: what a
// manifest pins.
func digest(args []string) error {
	fs := flag.NewFlagSet("digest", flag.ContinueOnError)
	archive := fs.String("archive", "", "the OCI archive")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *archive == "" {
		return errors.New("-archive is required")
	}
	content, err := readArchive(*archive)
	if err != nil {
		return err
	}
	defer content.Close()
	d, err := content.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}
