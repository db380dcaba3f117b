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
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"

	"golang.org/x/crypto/ssh"

	"tensorstack.dev/training/pkg/podbuilder"
)

// newSSHKeyPair makes an Ed25519 key pair: the private key in OpenSSH's
// format, the public key, and the public key again as the only authorized
// one, under the names of the Secret's keys.
func newSSHKeyPair() (map[string][]byte, error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(private, "")
	if err != nil {
		return nil, err
	}
	sshPublic, err := ssh.NewPublicKey(public)
	if err != nil {
		return nil, err
	}
	authorized := ssh.MarshalAuthorizedKey(sshPublic)
	return map[string][]byte{
		podbuilder.SSHPrivateKey:     pem.EncodeToMemory(block),
		podbuilder.SSHPublicKey:      authorized,
		podbuilder.SSHAuthorizedKeys: authorized,
	}, nil
}
