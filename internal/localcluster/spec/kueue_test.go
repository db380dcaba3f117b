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

package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestKueueQuantityTimes(t *testing.T) {
	tests := []struct {
		q    string
		n    int
		want string
	}{
		{"1000", 10, "10000"},
		{"4Ti", 10, "40Ti"},
		{"16Gi", 3, "48Gi"},
		{"250m", 4, "1000m"},
		{"4Ti", 0, "0Ti"},
		{"007", 2, "14"},
		// Not a whole number with a unit: kept as it is.
		{"1.5", 10, "1.5"},
		{"1e3", 2, "1e3"},
		{"-1", 2, "-1"},
		{" 4Ti", 2, " 4Ti"},
		{"4 Ti", 2, "4 Ti"},
		{"", 2, ""},
		{"99999999999999999999", 2, "99999999999999999999"},
	}
	for _, tt := range tests {
		if got := quantityTimes(tt.q, tt.n); got != tt.want {
			t.Errorf("quantityTimes(%q, %d) = %q, want %q", tt.q, tt.n, got, tt.want)
		}
	}
}

func TestKueueFillQuotas(t *testing.T) {
	doc := []byte(`cpu: "@CPU_QUOTA@"
memory: "@MEMORY_QUOTA@"
gpu: @GPU_QUOTA@ @GPU_QUOTA@
other: "@OTHER@"`)
	tests := []struct {
		name string
		s    Settings
		want string
	}{
		{
			name: "defaults",
			s:    Settings{KueueGPUQuota: 8, NodeCPU: "1000", NodeMemory: "4Ti", FakeNodes: 10},
			want: "cpu: \"10000\"\nmemory: \"40Ti\"\ngpu: 8 8\nother: \"@OTHER@\"",
		},
		{
			name: "fractional cpu stays per node",
			s:    Settings{KueueGPUQuota: 0, NodeCPU: "1.5", NodeMemory: "16Gi", FakeNodes: 3},
			want: "cpu: \"1.5\"\nmemory: \"48Gi\"\ngpu: 0 0\nother: \"@OTHER@\"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(fillQuotas(doc, &tt.s)); got != tt.want {
				t.Errorf("fillQuotas:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestKueueAWKRecords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\n", []string{""}},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\n\nb\n", []string{"a", "", "b"}},
		{"a\n\n", []string{"a", ""}},
	}
	for _, tt := range tests {
		if got := awkRecords([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("awkRecords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// crd is a CRD in controller-gen's layout: printer columns whose "name:" is
// deeper than the version's, v1beta1 then v1beta2.
const crd = `---
kind: CustomResourceDefinition
metadata:
  name: clusterqueues.kueue.x-k8s.io
spec:
  group: kueue.x-k8s.io
  versions:
  - additionalPrinterColumns:
    - jsonPath: .spec.cohort
      name: v1beta1
      type: string
    name: v1beta1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            type: object
        type: object
    served: true
    storage: false
  - deprecated: false
    name: v1beta2
    served: true
    storage: true
`

func TestKueueCRDVersions(t *testing.T) {
	unserved := strings.Replace(crd, "    served: true\n    storage: false", "    served: false\n    storage: false", 1)
	tests := []struct {
		name  string
		doc   string
		serve bool
		want  string
	}{
		{name: "served: unchanged", doc: crd, serve: true, want: crd},
		{name: "served: unchanged without a final newline", doc: "spec:\n    served: true", serve: true, want: "spec:\n    served: true"},
		{name: "unserved: v1beta1 only", doc: crd, want: unserved},
		{name: "unserved: the final newline is added", doc: strings.TrimSuffix(crd, "\n"), want: unserved},
		{name: "unserved: empty", doc: "", want: ""},
		{
			name: "unserved: a name after blanks and a tab",
			doc:  "  - x: y\n    name: \tv1beta1\n    served: true\n",
			want: "  - x: y\n    name: \tv1beta1\n    served: false\n",
		},
		{
			name: "unserved: a new version item forgets the name",
			doc:  "  - x: y\n    name: v1beta1\n  - x: z\n    served: true\n",
			want: "  - x: y\n    name: v1beta1\n  - x: z\n    served: true\n",
		},
		{
			// A version whose name is its first key, as multikueueconfigs
			// in Kueue v0.19.2 (hack/lib/local.sh's awk missed it).
			name: "unserved: a version named on its item line",
			doc:  "  - name: v1beta1\n    served: true\n  - name: v1beta2\n    served: true\n",
			want: "  - name: v1beta1\n    served: false\n  - name: v1beta2\n    served: true\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(crdVersions([]byte(tt.doc), tt.serve)); got != tt.want {
				t.Errorf("crdVersions:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestKueueConversionWebhook(t *testing.T) {
	stanza := `  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          namespace: kueue-system
          name: kueue-webhook-service
          path: /convert
          port: 1234
      conversionReviewVersions:
      - v1
`
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr string
	}{
		{
			name: "under the top-level spec",
			doc:  crd,
			want: strings.Replace(crd, "\nspec:\n", "\nspec:\n"+stanza, 1),
		},
		{
			name: "spec is the last line",
			doc:  "kind: CustomResourceDefinition\nspec:",
			want: "kind: CustomResourceDefinition\nspec:\n" + stanza,
		},
		{name: "no spec", doc: "kind: CustomResourceDefinition\n  spec:\n", wantErr: "expected one top-level spec:, found 0"},
		{name: "two specs", doc: "spec:\n  a: b\nspec:\n", wantErr: "expected one top-level spec:, found 2"},
		{name: "spec with a value is not the spec line", doc: "spec: {}\n", wantErr: "found 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withConversionWebhook([]byte(tt.doc), 1234)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("withConversionWebhook: err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("withConversionWebhook:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// webhookEntry is one webhook as controller-gen writes it.
func webhookEntry(name, path string) string {
	return `- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: ` + path + `
  failurePolicy: Fail
  name: ` + name + `
  sideEffects: None
`
}

// keptEntry is webhookEntry as filterWebhooks rewrites it.
func keptEntry(name, path string) string {
	return `- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: kueue-webhook-service
      namespace: kueue-system
      path: ` + path + `
      port: 1234
  failurePolicy: Fail
  name: ` + name + `
  sideEffects: None
`
}

func TestKueueFilterWebhooks(t *testing.T) {
	manifests := "---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n" +
		"  name: mutating-webhook-configuration\nwebhooks:\n" +
		webhookEntry("mjob.kb.io", "/mutate-batch-v1-job") +
		webhookEntry("mpod.kb.io", "/mutate--v1-pod") +
		webhookEntry("mworkload.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-workload") +
		"---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n" +
		"  name: validating-webhook-configuration\nwebhooks:\n" +
		webhookEntry("vdeployment.kb.io", "/validate-apps-v1-deployment") +
		webhookEntry("vjob.kb.io", "/validate-batch-v1-job") +
		// No name: never kept.
		"- admissionReviewVersions:\n  - v1\n"
	want := "---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n" +
		"  name: kueue-mutating-webhook-configuration\nwebhooks:\n" +
		keptEntry("mjob.kb.io", "/mutate-batch-v1-job") +
		keptEntry("mworkload.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-workload") +
		"---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n" +
		"  name: kueue-validating-webhook-configuration\nwebhooks:\n" +
		keptEntry("vjob.kb.io", "/validate-batch-v1-job")

	tests := []struct {
		name    string
		keep    []string
		want    string
		wantErr string
	}{
		{name: "kept, renamed, pointed at the Service", keep: []string{"mjob.kb.io", "mworkload.kb.io", "vjob.kb.io"}, want: want},
		{name: "a webhook is missing", keep: []string{"mjob.kb.io", "vcohort.kb.io", "vjob.kb.io", "mfoo.kb.io"}, wantErr: "no webhook vcohort.kb.io, mfoo.kb.io"},
		{name: "a name is matched whole", keep: []string{"job.kb.io"}, wantErr: "no webhook job.kb.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := filterWebhooks([]byte(manifests), tt.keep, 1234)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("filterWebhooks: err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("filterWebhooks:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// kueueFixture is a trimmed copy of Kueue v0.19.2's manifests.
func kueueFixture(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "modules", "kueue"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// kueueTestConfig is a stack of this checkout with the default settings,
// changed by edit, reading Kueue's manifests from module.
func kueueTestConfig(t *testing.T, module string, edit func(*Settings)) Config {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultPaths(repo, filepath.Join(t.TempDir(), "local"))
	p.Modules.Kueue = module
	return testConfigIn(t, p, 0, edit)
}

// byPath is the files' contents by path, each checked to be a 0644 file.
func byPath(t *testing.T, files []File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		if f.Dir || f.Mode != 0o644 {
			t.Errorf("%s: a directory or mode %04o, want a file of 0644", f.Path, f.Mode)
		}
		out[f.Path] = string(f.Data)
	}
	return out
}

// section is the part of doc from the first line that is from up to the
// next "---" line.
func section(doc, from string) string {
	i := strings.Index(doc, from)
	if i < 0 {
		return ""
	}
	rest := doc[i:]
	if j := strings.Index(rest, "\n---\n"); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

func TestKueueFiles(t *testing.T) {
	module := kueueFixture(t)
	tests := []struct {
		name       string
		edit       func(*Settings)
		multiKueue bool
		served     bool
		cpu        string // LOCAL_NODE_CPU × LOCAL_FAKE_NODES
	}{
		{name: "defaults", served: true, cpu: "10000"},
		{
			name: "v1beta1 unserved, MultiKueue, other quotas and ports",
			edit: func(s *Settings) {
				s.KueueV1beta1 = false
				s.MultiKueue = true
				s.NodeCPU, s.NodeMemory, s.FakeNodes, s.KueueGPUQuota = "250", "16Gi", 3, 5
				s.KueueWebhookPort, s.KueueHealthPort, s.KueueMetricsPort = 1234, 2345, 3456
				s.KueuePodsReadyTimeout = "5m"
			},
			multiKueue: true,
			cpu:        "750",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := kueueTestConfig(t, module, tt.edit)
			s := &c.Settings
			written, err := c.kueueFiles(FileSystem{})
			if err != nil {
				t.Fatal(err)
			}
			files := byPath(t, written)
			get := func(name string) string {
				t.Helper()
				data, ok := files[c.ConfigFile(name)]
				if !ok {
					t.Fatalf("%s was not written (0644); %d files were", name, len(files))
				}
				return data
			}
			wantFiles := 5
			if tt.multiKueue {
				wantFiles++
			}
			if len(files) != wantFiles {
				t.Errorf("wrote %d files, want %d", len(files), wantFiles)
			}
			webhook := port(s.KueueWebhookPort)
			noPlaceholder := func(name, data string) {
				t.Helper()
				for _, p := range []string{"@HEALTH_PORT@", "@METRICS_PORT@", "@WEBHOOK_PORT@", "@CERT_DIR@",
					"@PODS_READY_TIMEOUT@", "@GPU_QUOTA@", "@CPU_QUOTA@", "@MEMORY_QUOTA@"} {
					if strings.Contains(data, p) {
						t.Errorf("%s keeps the placeholder %s", name, p)
					}
				}
			}

			config := get("kueue.yaml")
			noPlaceholder("kueue.yaml", config)
			for _, want := range []string{
				"  healthProbeBindAddress: 127.0.0.1:" + port(s.KueueHealthPort) + "\n",
				"  bindAddress: 127.0.0.1:" + port(s.KueueMetricsPort) + "\n",
				"  port: " + webhook + "\n",
				"  certDir: " + c.Paths.Dir + "/kueue/certs\n",
				"  timeout: " + s.KueuePodsReadyTimeout + "\n",
			} {
				if !strings.Contains(config, want) {
					t.Errorf("kueue.yaml lacks %q", want)
				}
			}

			system := get("kueue-system.yaml")
			noPlaceholder("kueue-system.yaml", system)
			if !strings.Contains(system, "    port: "+webhook+"\n    protocol: TCP\n    targetPort: "+webhook+"\n") {
				t.Errorf("kueue-system.yaml: the Service does not name port %s:\n%s", webhook, system)
			}

			crds := get("kueue-crds.yaml")
			if n := strings.Count(crds, "\nkind: CustomResourceDefinition\n"); n != 6 {
				t.Errorf("kueue-crds.yaml has %d CRDs, want the fixture's 6", n)
			}
			conversion := "spec:\n  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service:\n" +
				"          namespace: kueue-system\n          name: kueue-webhook-service\n          path: /convert\n" +
				"          port: " + webhook + "\n      conversionReviewVersions:\n      - v1\n  group: kueue.x-k8s.io\n"
			for _, name := range kueueConversionCRDs {
				if crd := section(crds, "  name: "+name+".kueue.x-k8s.io\n"); !strings.Contains(crd, conversion) {
					t.Errorf("CRD %s lacks the conversion webhook:\n%s", name, crd)
				}
			}
			if crd := section(crds, "  name: resourceflavors.kueue.x-k8s.io\n"); crd == "" || strings.Contains(crd, "conversion:") {
				t.Errorf("CRD resourceflavors: want it without a conversion webhook:\n%s", crd)
			}
			served, unserved := strings.Count(crds, "    served: true\n"), strings.Count(crds, "    served: false\n")
			wantServed, wantUnserved := 12, 0
			if !tt.served {
				wantServed, wantUnserved = 6, 6
			}
			if served != wantServed || unserved != wantUnserved {
				t.Errorf("kueue-crds.yaml: %d versions served, %d not; want %d and %d", served, unserved, wantServed, wantUnserved)
			}
			if !tt.served && !strings.Contains(crds, "    name: v1beta1\n    schema:") {
				t.Errorf("kueue-crds.yaml lost its v1beta1 versions")
			}

			webhooks := get("kueue-webhooks.yaml")
			for _, want := range []string{
				"  name: kueue-mutating-webhook-configuration\n",
				"  name: kueue-validating-webhook-configuration\n",
			} {
				if !strings.Contains(webhooks, want) {
					t.Errorf("kueue-webhooks.yaml lacks %q", want)
				}
			}
			for _, w := range kueueWebhooks {
				if n := strings.Count(webhooks, "\n  name: "+w+"\n"); n != 1 {
					t.Errorf("kueue-webhooks.yaml has webhook %s %d times, want once", w, n)
				}
			}
			for _, dropped := range []string{"mpod.kb.io", "vdeployment.kb.io", "  name: mutating-webhook-configuration", "name: webhook-service\n", "namespace: system\n"} {
				if strings.Contains(webhooks, dropped) {
					t.Errorf("kueue-webhooks.yaml keeps %q", dropped)
				}
			}
			service := "      name: kueue-webhook-service\n      namespace: kueue-system\n      path: "
			if n := strings.Count(webhooks, service); n != len(kueueWebhooks) {
				t.Errorf("kueue-webhooks.yaml: %d webhooks name Kueue's Service, want %d", n, len(kueueWebhooks))
			}
			if n := strings.Count(webhooks, "\n      port: "+webhook+"\n"); n != len(kueueWebhooks) {
				t.Errorf("kueue-webhooks.yaml: %d webhooks name port %s, want %d", n, webhook, len(kueueWebhooks))
			}

			quotas := "      - name: cpu\n        nominalQuota: \"" + tt.cpu + "\"\n" +
				"      - name: memory\n        nominalQuota: \"" + quantityTimes(s.NodeMemory, s.FakeNodes) + "\"\n" +
				"      - name: nvidia.com/gpu\n        nominalQuota: " + strconv.Itoa(s.KueueGPUQuota) + "\n"
			queues := get("kueue-queues.yaml")
			noPlaceholder("kueue-queues.yaml", queues)
			if n := strings.Count(queues, quotas); n != 2 {
				t.Errorf("kueue-queues.yaml: %d ClusterQueues with quotas\n%s\nwant 2:\n%s", n, quotas, queues)
			}
			if tt.multiKueue {
				manager := get("multikueue-manager.yaml")
				noPlaceholder("multikueue-manager.yaml", manager)
				if !strings.Contains(manager, quotas) {
					t.Errorf("multikueue-manager.yaml lacks the quotas\n%s\n%s", quotas, manager)
				}
			}
		})
	}
}

// writeFixture copies the fixture's module into a temporary directory,
// without the files named in drop and with edit applied to each file.
func writeFixture(t *testing.T, drop string, edit func(path string, data []byte) []byte) string {
	t.Helper()
	src, dst := kueueFixture(t), t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || filepath.Base(rel) == drop {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if edit != nil {
			data = edit(rel, data)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestKueueFilesErrors(t *testing.T) {
	tests := []struct {
		name    string
		module  func(t *testing.T) string
		wantErr string
	}{
		{
			name:    "not a Kueue module",
			module:  func(t *testing.T) string { return t.TempDir() },
			wantErr: "no Kueue module at",
		},
		{
			name:    "a CRD to convert is missing",
			module:  func(t *testing.T) string { return writeFixture(t, "kueue.x-k8s.io_cohorts.yaml", nil) },
			wantErr: "no CRD cohorts.kueue.x-k8s.io in ",
		},
		{
			name: "a CRD to convert has two top-level specs",
			module: func(t *testing.T) string {
				return writeFixture(t, "", func(path string, data []byte) []byte {
					if strings.HasSuffix(path, "_workloads.yaml") {
						data = append(data, "spec:\n"...)
					}
					return data
				})
			},
			wantErr: "kueue.x-k8s.io_workloads.yaml: expected one top-level spec:, found 2",
		},
		{
			name: "a registered webhook is missing",
			module: func(t *testing.T) string {
				return writeFixture(t, "", func(path string, data []byte) []byte {
					return bytes.ReplaceAll(data, []byte("  name: vcohort.kb.io\n"), []byte("  name: vcohorts.kb.io\n"))
				})
			},
			wantErr: "manifests.yaml: no webhook vcohort.kb.io",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := kueueTestConfig(t, tt.module(t), nil)
			files, err := c.kueueFiles(FileSystem{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("kueueFiles: err %v, want one containing %q", err, tt.wantErr)
			}
			// Nothing is written from a module that fails the checks.
			if len(files) != 0 {
				t.Errorf("would write %d files", len(files))
			}
		})
	}
}

func TestKueueComponents(t *testing.T) {
	c := kueueTestConfig(t, "/go/pkg/mod/sigs.k8s.io/kueue@v0.19.2", nil)

	install := KueueInstall(c)
	if install.Name != "kueue-install" || install.IsProcess() || !reflect.DeepEqual(install.After, []string{"kube-apiserver"}) {
		t.Errorf("kueue-install: %+v", install)
	}
	wantSteps := []Step{
		Log{"installing Kueue v0.19.2: namespace kueue-system, Service kueue-webhook-service (ExternalName 127.0.0.1:16263), CRDs kueue.x-k8s.io, webhook configurations"},
		Apply{Files: []string{c.ConfigFile("kueue-system.yaml")}},
		Apply{Files: []string{c.ConfigFile("kueue-crds.yaml")}, ServerSide: true},
		Apply{Files: []string{c.ConfigFile("kueue-webhooks.yaml")}, ServerSide: true},
	}
	if !reflect.DeepEqual(install.Steps, wantSteps) {
		t.Errorf("kueue-install steps:\n%v\nwant:\n%v", install.Steps, wantSteps)
	}
	wantChecks := []Check{{What: "CRDs kueue.x-k8s.io Established", Probe: CRDsEstablished{Group: "kueue.x-k8s.io", CRDsFile: c.ConfigFile("kueue-crds.yaml")}}}
	if !reflect.DeepEqual(install.Ready, wantChecks) {
		t.Errorf("kueue-install checks %+v, want %+v", install.Ready, wantChecks)
	}

	k := Kueue(c)
	if k.Name != "kueue" || k.Binary != c.Bin("kueue") || !k.Restartable || !reflect.DeepEqual(k.After, []string{"kueue-install"}) {
		t.Errorf("kueue: %+v", k)
	}
	if want := []string{"--config=" + c.ConfigFile("kueue.yaml"), "--kubeconfig=" + c.PKI("kueue.kubeconfig")}; !reflect.DeepEqual(k.Args, want) {
		t.Errorf("kueue args %q, want %q", k.Args, want)
	}
	wantPorts := []Port{{"LOCAL_KUEUE_WEBHOOK_PORT", 16263}, {"LOCAL_KUEUE_METRICS_PORT", 16264}, {"LOCAL_KUEUE_HEALTH_PORT", 16265}}
	if !reflect.DeepEqual(k.Ports, wantPorts) {
		t.Errorf("kueue ports %v, want %v", k.Ports, wantPorts)
	}
	wantChecks = []Check{
		{What: "Kueue's webhook certificate in kueue-system/kueue-webhook-server-cert",
			Probe: SecretCopied{Namespace: "kueue-system", Name: "kueue-webhook-server-cert", Dir: c.Paths.Dir + "/kueue/certs"}},
		{What: "kueue /readyz on 127.0.0.1:16265", Probe: GetURL{URL: "http://127.0.0.1:16265/readyz"}},
		{What: "Kueue's webhooks (a dry-run ClusterQueue through kube-apiserver)", Probe: ServerDryRun{Manifest: kueueWebhookProbe}},
	}
	if !reflect.DeepEqual(k.Ready, wantChecks) {
		t.Errorf("kueue checks:\n%+v\nwant:\n%+v", k.Ready, wantChecks)
	}

	queues := KueueQueues(c)
	if queues.Name != "kueue-queues" || queues.IsProcess() || !reflect.DeepEqual(queues.After, []string{"kueue"}) {
		t.Errorf("kueue-queues: %+v", queues)
	}
	wantSteps = []Step{
		Log{"creating Kueue's ResourceFlavor default-flavor, ClusterQueue cluster-queue (nvidia.com/gpu 8) and LocalQueue default/user-queue"},
		Apply{Files: []string{c.ConfigFile("kueue-queues.yaml")}},
	}
	if !reflect.DeepEqual(queues.Steps, wantSteps) {
		t.Errorf("kueue-queues steps:\n%v\nwant:\n%v", queues.Steps, wantSteps)
	}
	wantChecks = []Check{{What: "ClusterQueue cluster-queue Active",
		Probe: ConditionTrue{Path: "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue", Type: "Active"}}}
	if !reflect.DeepEqual(queues.Ready, wantChecks) {
		t.Errorf("kueue-queues checks %+v, want %+v", queues.Ready, wantChecks)
	}
}
