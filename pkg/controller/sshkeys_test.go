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

package controller

import (
	"bytes"
	"testing"

	"golang.org/x/crypto/ssh"

	"tensorstack.dev/training/pkg/podbuilder"
)

// TestSSHKeyPair: the private key parses, its public key is the one given
// and the only authorized one, and every pair is new.
func TestSSHKeyPair(t *testing.T) {
	keys, err := newSSHKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(keys[podbuilder.SSHPrivateKey])
	if err != nil {
		t.Fatalf("the private key does not parse: %v", err)
	}
	public := ssh.MarshalAuthorizedKey(signer.PublicKey())
	if !bytes.Equal(public, keys[podbuilder.SSHPublicKey]) || !bytes.Equal(public, keys[podbuilder.SSHAuthorizedKeys]) {
		t.Errorf("public key %q and authorized keys %q, want both %q", keys[podbuilder.SSHPublicKey],
			keys[podbuilder.SSHAuthorizedKeys], public)
	}
	other, err := newSSHKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other[podbuilder.SSHPrivateKey], keys[podbuilder.SSHPrivateKey]) {
		t.Error("two pairs share a private key")
	}
}
