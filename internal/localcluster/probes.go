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

package localcluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// probe is how the host asks what a check says.
func (r *runner) probe(p spec.Probe) func(context.Context) error {
	switch p := p.(type) {
	case spec.GetURL:
		return func(ctx context.Context) error {
			hc, err := r.httpClient(p)
			if err != nil {
				return err
			}
			_, err = httpGet(ctx, hc, p.URL)
			return err
		}
	case spec.Health:
		return func(ctx context.Context) error { return healthProbe(ctx, p.Base) }
	case spec.ConditionTrue:
		return func(ctx context.Context) error { return r.conditionTrue(ctx, p.Path, p.Type) }
	case spec.ObjectExists:
		return func(ctx context.Context) error {
			_, err := r.kube.get(ctx, p.Path)
			return err
		}
	case spec.NodesReady:
		return func(ctx context.Context) error { return r.nodesReady(ctx, p) }
	case spec.SocketExists:
		return func(context.Context) error {
			if info, err := os.Stat(p.Path); err != nil || info.Mode()&os.ModeSocket == 0 {
				return fmt.Errorf("no socket yet")
			}
			return nil
		}
	case spec.LogContains:
		return func(context.Context) error {
			data, _ := os.ReadFile(p.File)
			for _, s := range p.Any {
				if strings.Contains(string(data), s) {
					return nil
				}
			}
			return fmt.Errorf("not in %s yet", filepath.Base(p.File))
		}
	case spec.CRDsEstablished:
		return func(ctx context.Context) error { return r.crdsEstablished(ctx, p) }
	case spec.SecretCopied:
		return func(ctx context.Context) error { return r.copySecret(ctx, p) }
	case spec.ServerDryRun:
		return func(ctx context.Context) error {
			return r.kubectl(ctx, []byte(p.Manifest), "create", "--dry-run=server", "-o", "name", "-f", "-")
		}
	case spec.GetInNode:
		// Through curl in the node's network namespace: a socket belongs to
		// its thread's namespace, which Go does not let a goroutine keep.
		return func(ctx context.Context) error {
			_, err := r.host.Run(ctx, Command{Path: "ip", Args: []string{"netns", "exec", p.NetNS, "curl", "-fsS", "--max-time", "2", p.URL}})
			return err
		}
	case spec.ExecSucceeds:
		return func(ctx context.Context) error {
			cmd := p.Command
			if p.Namespace != nil {
				cmd = append(r.nodes.wrap(p.Namespace), cmd...)
			}
			_, err := r.host.Run(ctx, Command{Path: cmd[0], Args: cmd[1:]})
			return err
		}
	case spec.StepsFinished:
		return func(context.Context) error { return r.backgroundDone(p.Component) }
	}
	return func(context.Context) error { return permanent{fmt.Errorf("no host probe for %T", p)} }
}

// httpClient is made on first use: the certificates exist only once the
// stack's files are written.
func (r *runner) httpClient(p spec.GetURL) (*http.Client, error) {
	switch {
	case p.Admin:
		return r.kube.client()
	case p.CA != "":
		return tlsClient(p.CA, "", "")
	case p.Insecure:
		return tlsClient("", "", "")
	}
	return http.DefaultClient, nil
}

// healthProbe holds on 2xx from /readyz or /healthz, or when the server
// answers 404 on both (no probe endpoint registered: it listens, which is
// all there is to check).
func healthProbe(ctx context.Context, base string) error {
	notFound := 0
	var last error
	for _, path := range []string{"/readyz", "/healthz"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case resp.StatusCode == http.StatusNotFound:
			notFound++
		}
		last = fmt.Errorf("GET %s: %s", base+path, resp.Status)
	}
	if notFound == 2 {
		return nil
	}
	return last
}

// conditionTrue holds when the object at path has condition cond True.
func (r *runner) conditionTrue(ctx context.Context, path, cond string) error {
	obj, err := r.kube.get(ctx, path)
	if err != nil {
		return err
	}
	if conditionStatus(obj, cond) != "True" {
		return fmt.Errorf("%s is not %s", path, cond)
	}
	return nil
}

func (r *runner) nodesReady(ctx context.Context, p spec.NodesReady) error {
	nodes, err := r.kube.items(ctx, "/api/v1/nodes?labelSelector="+strings.ReplaceAll(p.Selector, "=", "%3D"))
	if err != nil {
		return err
	}
	ready := 0
	for _, n := range nodes {
		if conditionStatus(n, "Ready") == "True" {
			ready++
		}
	}
	if ready < p.Count {
		return fmt.Errorf("%d of %d nodes %s Ready", ready, p.Count, p.Selector)
	}
	return nil
}

// crdsEstablished holds once as many CRDs of the group are Established as
// the manifest holds.
func (r *runner) crdsEstablished(ctx context.Context, p spec.CRDsEstablished) error {
	data, err := os.ReadFile(p.CRDsFile)
	if err != nil {
		return err
	}
	want := spec.CountCRDs(data)
	crds, err := r.kube.items(ctx, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
	if err != nil {
		return err
	}
	established := 0
	for _, crd := range crds {
		s, _ := crd["spec"].(map[string]any)
		if s["group"] == p.Group && conditionStatus(crd, "Established") == "True" {
			established++
		}
	}
	if established < want {
		return fmt.Errorf("%d of %d CRDs %s Established", established, want, p.Group)
	}
	return nil
}

// copySecret copies the serving certificate from a Secret into a
// directory, a kubelet's job in a pod. It fails while the Secret is empty.
func (r *runner) copySecret(ctx context.Context, p spec.SecretCopied) error {
	secret, err := r.kube.get(ctx, "/api/v1/namespaces/"+p.Namespace+"/secrets/"+p.Name)
	if err != nil {
		return err
	}
	data, _ := secret["data"].(map[string]any)
	crt, _ := data["tls.crt"].(string)
	key, _ := data["tls.key"].(string)
	if crt == "" || key == "" {
		return fmt.Errorf("secret %s/%s holds no certificate yet", p.Namespace, p.Name)
	}
	keyPEM, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return fmt.Errorf("secret %s/%s: tls.key: %w", p.Namespace, p.Name, err)
	}
	crtPEM, err := base64.StdEncoding.DecodeString(crt)
	if err != nil {
		return fmt.Errorf("secret %s/%s: tls.crt: %w", p.Namespace, p.Name, err)
	}
	if err := r.host.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	// The key first: Kueue's rotator waits for tls.crt, and reads the key then.
	if err := r.host.WriteFile(filepath.Join(p.Dir, "tls.key"), keyPEM, 0o600); err != nil {
		return err
	}
	return r.host.WriteFile(filepath.Join(p.Dir, "tls.crt"), crtPEM, 0o600)
}

// backgroundDone holds once the component's background steps finished, and
// fails for good when they failed. A dry run ran them at once.
func (r *runner) backgroundDone(component string) error {
	if r.host.DryRun() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err, ok := r.finished[component]; ok {
		if err != nil {
			return permanent{err}
		}
		return nil
	}
	result, ok := r.background[component]
	if !ok {
		return permanent{fmt.Errorf("%s started no background work", component)}
	}
	select {
	case err := <-result:
		r.finished[component] = err
		if err != nil {
			return permanent{err}
		}
		return nil
	default:
		return fmt.Errorf("still running")
	}
}
