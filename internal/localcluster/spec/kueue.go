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
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kueue runs as kueueUser, a client certificate in system:masters: Kueue's
// own RBAC is not installed. Its webhooks and CRD conversion webhooks name
// the Service kueueNamespace/kueueWebhookService (ExternalName 127.0.0.1).
// Its certificate rotator keeps the serving certificate in kueueWebhookSecret
// and injects its CA into the webhook configurations named after that
// Service (kueue-mutating-webhook-configuration and
// kueue-validating-webhook-configuration) and into the CRDs of
// kueueConversionCRDs.
const (
	kueueUser           = "system:kueue"
	kueueNamespace      = "kueue-system"
	kueueWebhookService = "kueue-webhook-service"
	kueueWebhookSecret  = "kueue-webhook-server-cert"
	kueueClusterQueue   = "cluster-queue"
	kueueGroup          = "kueue.x-k8s.io"
)

// kueueConversionCRDs are the CRDs Kueue converts between v1beta1 and
// v1beta2 (the stored version): they get the conversion webhook.
var kueueConversionCRDs = []string{"localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters"}

// kueueWebhooks are the webhooks of Kueue's manifests that are registered:
// Kueue's own kinds and the batch/job integration. The others (pods,
// deployments, statefulsets, the Kubeflow, Ray, JobSet ... kinds) would send
// every such request in the cluster to Kueue, which answers with a no-op for
// a framework it does not run, and would fail them (failurePolicy Fail)
// while Kueue is down.
var kueueWebhooks = []string{
	"mjob.kb.io", "mclusterqueue.kb.io", "mresourceflavor.kb.io", "mworkload.kb.io",
	"vjob.kb.io", "vclusterqueue.kb.io", "vcohort.kb.io", "vresourceflavor.kb.io", "vworkload.kb.io",
}

// kueueWebhookProbe is created as a server-side dry run: it passes through
// Kueue's mutating and validating webhooks without being stored.
const kueueWebhookProbe = `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: local-up-webhook-check
spec:
  namespaceSelector: {}
`

// kueueRelease names Kueue with the version of its module directory
// (sigs.k8s.io/kueue@VERSION in the module cache), for progress lines.
func (c Config) kueueRelease() string {
	if _, version, ok := strings.Cut(filepath.Base(c.Paths.Modules.Kueue), "@"); ok {
		return "Kueue " + version
	}
	return "Kueue"
}

// kueueCertDir is Kueue's certDir: in a pod the kubelet mounts the Secret
// there; here kueueSyncCerts copies it.
func (c Config) kueueCertDir() string { return c.dir("kueue/certs") }

// kueueFiles writes Kueue's configuration, the objects it needs before it
// starts, its CRDs with the conversion webhook, the registered subset of its
// webhook configurations and the example queues into the config directory.
func (c Config) kueueFiles(src Source) ([]File, error) {
	s := &c.Settings
	module := c.Paths.Modules.Kueue
	bases := filepath.Join(module, "config", "components", "crd", "bases")
	if !src.IsDir(bases) {
		return nil, fmt.Errorf("no Kueue module at %s (it lacks config/components/crd/bases); run make test-binaries", module)
	}
	port := strconv.Itoa(s.KueueWebhookPort)

	config, err := c.readHack(src, "kueue/kueue-config.yaml")
	if err != nil {
		return nil, err
	}
	if config, err = kueueConfiguration(config, s, c.kueueCertDir()); err != nil {
		return nil, err
	}
	system, err := c.readHack(src, "kueue/system.yaml")
	if err != nil {
		return nil, err
	}
	system = replaceInOrder(system, "@WEBHOOK_PORT@", port)

	crds, err := kueueCRDs(src, bases, s.KueueV1beta1, s.KueueWebhookPort)
	if err != nil {
		return nil, err
	}
	manifests := filepath.Join(module, "config", "components", "webhook", "manifests.yaml")
	data, err := src.ReadFile(manifests)
	if err != nil {
		return nil, err
	}
	webhooks, err := filterWebhooks(data, kueueWebhooks, s.KueueWebhookPort)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifests, err)
	}
	queues, err := c.readHack(src, "kueue/queues.yaml")
	if err != nil {
		return nil, err
	}

	files := []File{
		c.configFile("kueue.yaml", config),
		c.configFile("kueue-system.yaml", system),
		c.configFile("kueue-crds.yaml", crds),
		c.configFile("kueue-webhooks.yaml", webhooks),
		c.configFile("kueue-queues.yaml", fillQuotas(queues, s)),
	}
	if s.MultiKueueOn() {
		manager, err := c.readHack(src, "multikueue/manager.yaml")
		if err != nil {
			return nil, err
		}
		files = append(files, c.configFile("multikueue-manager.yaml", fillQuotas(manager, s)))
	}
	return files, nil
}

// readHack reads a file of hack/local.
func (c Config) readHack(src Source, name string) ([]byte, error) {
	return src.ReadFile(filepath.Join(c.Paths.Hack(), name))
}

// replaceInOrder replaces each old string with its new one, one pair after
// the other, as a list of sed expressions does.
func replaceInOrder(doc []byte, oldnew ...string) []byte {
	for i := 0; i+1 < len(oldnew); i += 2 {
		doc = bytes.ReplaceAll(doc, []byte(oldnew[i]), []byte(oldnew[i+1]))
	}
	return doc
}

// fillQuotas fills in the quota placeholders of a queues file: the GPU
// quota, and the cpu and memory of all the fake nodes together.
func fillQuotas(doc []byte, s *Settings) []byte {
	return replaceInOrder(doc,
		"@GPU_QUOTA@", strconv.Itoa(s.KueueGPUQuota),
		"@CPU_QUOTA@", quantityTimes(s.NodeCPU, s.FakeNodes),
		"@MEMORY_QUOTA@", quantityTimes(s.NodeMemory, s.FakeNodes))
}

var wholeQuantity = regexp.MustCompile(`^([0-9]+)([A-Za-z]*)$`)

// quantityTimes multiplies a quantity that is a whole number with an
// optional unit (1000, 4Ti) by n; any other quantity (1.5, 500m, 1e3) comes
// back as it is. The digits are decimal, leading zeros included.
func quantityTimes(q string, n int) string {
	m := wholeQuantity.FindStringSubmatch(q)
	if m == nil {
		return q
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return q // too large to be a useful quota
	}
	return strconv.FormatInt(v*int64(n), 10) + m[2]
}

// kueueCRDs concatenates the CRDs of the module's bases directory, in file
// name order. Kueue's controllers watch most of them, so all are installed;
// the ones it converts get the conversion webhook, as Kueue's kustomization
// patches them (config/components/crd/patches).
func kueueCRDs(src Source, bases string, serveV1beta1 bool, port int) ([]byte, error) {
	files, err := src.Glob(filepath.Join(bases, kueueGroup+"_*.yaml"))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, f := range files {
		data, err := src.ReadFile(f)
		if err != nil {
			return nil, err
		}
		data = crdVersions(data, serveV1beta1)
		name := strings.TrimPrefix(strings.TrimSuffix(filepath.Base(f), ".yaml"), kueueGroup+"_")
		if slices.Contains(kueueConversionCRDs, name) {
			if data, err = withConversionWebhook(data, port); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
		out.Write(data)
	}
	// A CRD that lacks the webhook would keep its objects in v1beta1 only.
	have := map[string]bool{}
	for _, line := range awkRecords(out.Bytes()) {
		have[line] = true
	}
	for _, name := range kueueConversionCRDs {
		if !have["  name: "+name+"."+kueueGroup] {
			return nil, fmt.Errorf("no CRD %s.%s in %s", name, kueueGroup, bases)
		}
	}
	return out.Bytes(), nil
}

// crdVersions marks the v1beta1 version of a CRD unserved unless
// serveV1beta1, as Kueue v0.20 ships it (kueue#14558). It relies on
// controller-gen's layout: each version starts with "  - " and has its
// "    name:" and "    served:" lines inside.
func crdVersions(doc []byte, serveV1beta1 bool) []byte {
	if serveV1beta1 {
		return doc
	}
	var out bytes.Buffer
	version := ""
	for _, line := range awkRecords(doc) {
		switch {
		case strings.HasPrefix(line, "  - name: "):
			// A version whose name is its item's first key
			// (multikueueconfigs in Kueue v0.19.2).
			version = strings.TrimSpace(strings.TrimPrefix(line, "  - name: "))
		case strings.HasPrefix(line, "  - "):
			version = ""
		case strings.HasPrefix(line, "    name: "):
			version = awkField(line, 2)
		}
		if line == "    served: true" && version == "v1beta1" {
			line = "    served: false"
		}
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}

// withConversionWebhook adds the conversion webhook through Kueue's Service
// to a CRD, right under its one top-level "spec:".
func withConversionWebhook(doc []byte, port int) ([]byte, error) {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	specs := 0
	for _, line := range lines {
		if string(bytes.TrimSuffix(line, []byte("\n"))) == "spec:" {
			specs++
		}
	}
	if specs != 1 {
		return nil, fmt.Errorf("expected one top-level spec:, found %d", specs)
	}
	stanza := fmt.Sprintf(`  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          namespace: %s
          name: %s
          path: /convert
          port: %d
      conversionReviewVersions:
      - v1
`, kueueNamespace, kueueWebhookService, port)
	var out bytes.Buffer
	for _, line := range lines {
		out.Write(line)
		if string(bytes.TrimSuffix(line, []byte("\n"))) != "spec:" {
			continue
		}
		if !bytes.HasSuffix(line, []byte("\n")) {
			out.WriteByte('\n')
		}
		out.WriteString(stanza)
	}
	return out.Bytes(), nil
}

// filterWebhooks keeps the webhooks named in keep of controller-gen's
// manifests.yaml (a document per configuration, a webhook per
// "- admissionReviewVersions:" entry), renames the configurations as Kueue's
// rotator expects them, and points each webhook at Kueue's Service and port.
// It fails when a webhook of keep is not there.
func filterWebhooks(manifests []byte, keep []string, port int) ([]byte, error) {
	var out, entry bytes.Buffer
	name, inEntry := "", false
	kept := map[string]bool{}
	flush := func() {
		if entry.Len() > 0 && slices.Contains(keep, name) {
			out.Write(entry.Bytes())
			kept[name] = true
		}
		entry.Reset()
		name = ""
	}
	for _, line := range awkRecords(manifests) {
		if line == "---" {
			flush()
			inEntry = false
			out.WriteString(line + "\n")
			continue
		}
		if line == "- admissionReviewVersions:" {
			flush()
			inEntry = true
		}
		if !inEntry {
			if line == "  name: mutating-webhook-configuration" || line == "  name: validating-webhook-configuration" {
				line = "  name: kueue-" + strings.TrimPrefix(line, "  name: ")
			}
			out.WriteString(line + "\n")
			continue
		}
		if n, ok := strings.CutPrefix(line, "  name: "); ok {
			name = n
		}
		switch line {
		case "      name: webhook-service":
			line = "      name: " + kueueWebhookService
		case "      namespace: system":
			line = "      namespace: " + kueueNamespace
		}
		entry.WriteString(line + "\n")
		if strings.HasPrefix(line, "      path: ") {
			fmt.Fprintf(&entry, "      port: %d\n", port)
		}
	}
	flush()
	var missing []string
	for _, w := range keep {
		if !kept[w] {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no webhook %s", strings.Join(missing, ", "))
	}
	return out.Bytes(), nil
}

// awkRecords splits text into lines as awk reads them: a final newline ends
// the last line rather than starting an empty one.
func awkRecords(doc []byte) []string {
	if len(doc) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(doc), "\n"), "\n")
}

// awkField is awk's $i (from 1) with the default separator: fields are
// split on runs of blanks and tabs, leading ones ignored.
func awkField(line string, i int) string {
	fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if i < 1 || i > len(fields) {
		return ""
	}
	return fields[i-1]
}

// KueueInstall applies, before Kueue starts, its namespace, Secret and
// Service, its CRDs and its webhook configurations, and waits until the CRDs
// are served.
func KueueInstall(c Config) *Component {
	return &Component{
		Name: "kueue-install",
		Steps: []Step{
			Log{fmt.Sprintf("installing %s: namespace %s, Service %s (ExternalName 127.0.0.1:%d), CRDs %s, webhook configurations",
				c.kueueRelease(), kueueNamespace, kueueWebhookService, c.Settings.KueueWebhookPort, kueueGroup)},
			Apply{Files: []string{c.ConfigFile("kueue-system.yaml")}},
			// Server-side: the Workload CRD (1.4 MB) is over the size limit
			// of the last-applied annotation.
			Apply{Files: []string{c.ConfigFile("kueue-crds.yaml")}, ServerSide: true},
			Apply{Files: []string{c.ConfigFile("kueue-webhooks.yaml")}, ServerSide: true},
		},
		Ready: []Check{{
			What:  "CRDs " + kueueGroup + " Established",
			Probe: CRDsEstablished{Group: kueueGroup, CRDsFile: c.ConfigFile("kueue-crds.yaml")},
		}},
		After: []string{"kube-apiserver"},
	}
}

// Kueue is Kueue's controller manager; its ports, certificates and
// integrations are in its configuration file. It is ready once its
// certificate is in place, it reports ready, and its webhooks answer.
func Kueue(c Config) *Component {
	s := &c.Settings
	health := "127.0.0.1:" + port(s.KueueHealthPort)
	return &Component{
		Name:   "kueue",
		Binary: c.Bin("kueue"),
		Args: []string{
			"--config=" + c.ConfigFile("kueue.yaml"),
			"--kubeconfig=" + c.PKI("kueue.kubeconfig"),
		},
		Ports: []Port{
			{"LOCAL_KUEUE_WEBHOOK_PORT", s.KueueWebhookPort},
			{"LOCAL_KUEUE_METRICS_PORT", s.KueueMetricsPort},
			{"LOCAL_KUEUE_HEALTH_PORT", s.KueueHealthPort},
		},
		// Kueue's certificate rotator fills its Secret; the files must then
		// be in certDir before Kueue goes on (it waits for them, as for a
		// Secret mounted in a pod), injects its CA and starts its webhook
		// server.
		Ready: []Check{
			{
				What:  "Kueue's webhook certificate in " + kueueNamespace + "/" + kueueWebhookSecret,
				Probe: SecretCopied{Namespace: kueueNamespace, Name: kueueWebhookSecret, Dir: c.kueueCertDir()},
			},
			{
				What:  "kueue /readyz on " + health,
				Probe: GetURL{URL: "http://" + health + "/readyz"},
			},
			{
				What:  "Kueue's webhooks (a dry-run ClusterQueue through kube-apiserver)",
				Probe: ServerDryRun{Manifest: kueueWebhookProbe},
			},
		},
		After:       []string{"kueue-install"},
		Restartable: true,
	}
}

// KueueQueues applies the example ResourceFlavor, ClusterQueue and
// LocalQueue (hack/local/kueue/queues.yaml) once Kueue serves.
func KueueQueues(c Config) *Component {
	return &Component{
		Name: "kueue-queues",
		Steps: []Step{
			Log{fmt.Sprintf("creating Kueue's ResourceFlavor default-flavor, ClusterQueue %s (nvidia.com/gpu %d) and LocalQueue default/user-queue",
				kueueClusterQueue, c.Settings.KueueGPUQuota)},
			Apply{Files: []string{c.ConfigFile("kueue-queues.yaml")}},
		},
		Ready: []Check{{
			What:  "ClusterQueue " + kueueClusterQueue + " Active",
			Probe: ConditionTrue{Path: "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/" + kueueClusterQueue, Type: "Active"},
		}},
		After: []string{"kueue"},
	}
}

// CountCRDs counts the CustomResourceDefinitions of a manifest.
func CountCRDs(doc []byte) int {
	n := 0
	for _, line := range awkRecords(doc) {
		if line == "kind: CustomResourceDefinition" {
			n++
		}
	}
	return n
}
