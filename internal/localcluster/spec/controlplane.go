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
	"fmt"
	"time"
)

func Etcd(c Config) *Component {
	s := &c.Settings
	client := "http://127.0.0.1:" + port(s.EtcdPort)
	peer := "http://127.0.0.1:" + port(s.EtcdPeerPort)
	return &Component{
		Name:   "etcd",
		Binary: c.Bin("etcd"),
		Args: []string{
			"--name=local",
			"--data-dir=" + c.dir("etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=local=" + peer,
			// Test data only: no fsync. Figures measured with it are not
			// durable-storage figures.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=4294967296",
			"--log-level=warn",
		},
		Ports:       []Port{{"LOCAL_ETCD_PORT", s.EtcdPort}, {"LOCAL_ETCD_PEER_PORT", s.EtcdPeerPort}},
		Ready:       []Check{{What: "etcd on 127.0.0.1:" + port(s.EtcdPort), Probe: GetURL{URL: client + "/health"}}},
		After:       []string{"files"},
		Restartable: true,
	}
}

func KubeAPIServer(c Config) *Component {
	s := &c.Settings
	pki := c.PKI
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + port(s.EtcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + port(s.APIServerPort),
		"--endpoint-reconciler-type=none",
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--cert-dir=" + c.dir("kube-apiserver"),
		"--client-ca-file=" + pki("ca.crt"),
		"--tls-cert-file=" + pki("kube-apiserver.crt"),
		"--tls-private-key-file=" + pki("kube-apiserver.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"),
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + pki("front-proxy-client.key"),
		"--kubelet-certificate-authority=" + pki("ca.crt"),
		"--kubelet-client-certificate=" + pki("kube-apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pki("kube-apiserver-kubelet-client.key"),
		"--enable-aggregator-routing=false",
		// On SIGTERM, drain short requests and close watches and proxied
		// (aggregated) connections after 2s instead of up to 60s.
		"--shutdown-send-retry-after=true",
	}
	if s.GangWorkload {
		args = append(args, "--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true")
	}
	if len(c.Nodes) > 0 {
		// Kubelets and pods are reached through nodeproxy at their
		// addresses: node names resolve nowhere.
		args = append(args, "--egress-selector-config-file="+c.ConfigFile("egress-selector.yaml"),
			"--kubelet-preferred-address-types=InternalIP,Hostname")
	}
	args = append(args, s.APIServerExtraArgs...)
	after := []string{"etcd"}
	if len(c.Nodes) > 0 {
		after = append(after, "nodeproxy")
	}
	return &Component{
		Name:        "kube-apiserver",
		Binary:      c.Bin("kube-apiserver"),
		Args:        args,
		Ports:       []Port{{"LOCAL_APISERVER_PORT", s.APIServerPort}},
		StopTimeout: 20 * time.Second,
		Ready: []Check{{
			What:  "kube-apiserver /readyz on 127.0.0.1:" + port(s.APIServerPort),
			Probe: GetURL{URL: c.Server() + "/readyz", Admin: true},
		}},
		After:       after,
		Restartable: true,
	}
}

func KubeControllerManager(c Config) *Component {
	s := &c.Settings
	kc := c.PKI("kube-controller-manager.kubeconfig")
	args := []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + port(s.KCMPort),
		"--cert-dir=" + c.dir("kube-controller-manager"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.PKI("sa.key"),
		"--root-ca-file=" + c.PKI("ca.crt"),
		"--cluster-signing-cert-file=" + c.PKI("ca.crt"),
		"--cluster-signing-key-file=" + c.PKI("ca.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
	if s.GangWorkload {
		args = append(args, "--feature-gates=GenericWorkload=true")
	}
	return &Component{
		Name:   "kube-controller-manager",
		Binary: c.Bin("kube-controller-manager"),
		Args:   args,
		Ports:  []Port{{"LOCAL_KCM_PORT", s.KCMPort}},
		Ready: []Check{{
			What:  "kube-controller-manager /healthz on 127.0.0.1:" + port(s.KCMPort),
			Probe: GetURL{URL: "https://127.0.0.1:" + port(s.KCMPort) + "/healthz", Insecure: true},
		}},
		After:       []string{"kube-apiserver"},
		Restartable: true,
	}
}

// scheduler is kube-scheduler or the second scheduler (scheduler-plugins),
// which differ in binary, configuration and port only.
func scheduler(c Config, name, binary, setting string, listen int, after ...string) *Component {
	kc := c.PKI(name + ".kubeconfig")
	args := []string{
		"--config=" + c.ConfigFile(name+".yaml"),
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + port(listen),
		"--cert-dir=" + c.dir(name),
		"--leader-elect=false",
	}
	if name == "kube-scheduler" && c.Settings.GangWorkload {
		// Also turns on the GangScheduling plugin of the default profile.
		args = append(args, "--feature-gates=GenericWorkload=true")
	}
	return &Component{
		Name:   name,
		Binary: c.Bin(binary),
		Args:   args,
		Ports:  []Port{{setting, listen}},
		Ready: []Check{{
			What:  name + " /readyz on 127.0.0.1:" + port(listen),
			Probe: GetURL{URL: "https://127.0.0.1:" + port(listen) + "/readyz", Insecure: true},
		}},
		After:       append([]string{"kube-apiserver"}, after...),
		Restartable: true,
	}
}

func KubeScheduler(c Config) *Component {
	return scheduler(c, "kube-scheduler", "kube-scheduler", "LOCAL_SCHEDULER_PORT", c.Settings.SchedulerPort)
}

func SchedulerPlugins(c Config) *Component {
	return scheduler(c, "scheduler-plugins", "kube-scheduler-plugins", "LOCAL_SCHEDULER_PLUGINS_PORT",
		c.Settings.SchedulerPluginsPort, "scheduler-plugins-crd")
}

// schedulerPluginsCRD installs the PodGroup CRD (scheduling.x-k8s.io/v1alpha1,
// the only one coscheduling reads) and the second scheduler's RBAC.
func SchedulerPluginsCRD(c Config) *Component {
	crd := c.Paths.Modules.SchedulerPlugins + "/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
	return &Component{
		Name: "scheduler-plugins-crd",
		Steps: []Step{
			Log{fmt.Sprintf("installing CRD %s and the RBAC of %s", schedulerPluginsCRD, schedulerPluginsName)},
			Apply{Files: []string{crd, c.Paths.Hack() + "/scheduler-plugins-rbac.yaml"}},
		},
		Ready: []Check{{
			What:  "CRD " + schedulerPluginsCRD + " Established",
			Probe: ConditionTrue{Path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + schedulerPluginsCRD, Type: "Established"},
		}},
		After: []string{"kube-apiserver"},
	}
}

func KwokPolicy(c Config) *Component {
	return &Component{
		Name: "kwok-deletes-policy",
		// Before kwok runs: its deletes must behave as a kubelet's.
		Steps: []Step{Apply{Files: []string{c.Paths.Hack() + "/kwok-pod-deletes.yaml"}}},
		After: []string{"kube-apiserver"},
	}
}

func Kwok(c Config) *Component {
	s := &c.Settings
	return &Component{
		Name:   "kwok",
		Binary: c.Bin("kwok"),
		Args: []string{
			"--kubeconfig=" + c.PKI("kwok.kubeconfig"),
			"--config=" + c.ConfigFile("kwok-stages.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--cidr=" + kwokPodCIDR,
			"--node-ip=" + kwokNodeIP,
			"--node-port=" + port(s.KwokPort),
			"--tls-cert-file=" + c.PKI("kwok-kubelet.crt"),
			"--tls-private-key-file=" + c.PKI("kwok-kubelet.key"),
			"--node-lease-duration-seconds=40",
			"--server-address=127.0.0.1:" + port(s.KwokPort),
		},
		Ports: []Port{{"LOCAL_KWOK_PORT", s.KwokPort}},
		Ready: []Check{{
			What:  "kwok /healthz on 127.0.0.1:" + port(s.KwokPort),
			Probe: GetURL{URL: "https://127.0.0.1:" + port(s.KwokPort) + "/healthz", CA: c.PKI("ca.crt")},
		}},
		After:       []string{"kwok-deletes-policy"},
		Restartable: true,
	}
}

func FakeNodes(c Config) *Component {
	s := &c.Settings
	return &Component{
		Name: "fake-nodes",
		Steps: []Step{
			Log{fmt.Sprintf("creating %d fake nodes (cpu %s, memory %s, pods %d, nvidia.com/gpu %d each)",
				s.FakeNodes, s.NodeCPU, s.NodeMemory, s.NodePods, s.NodeGPUs)},
			Apply{Files: []string{c.ConfigFile("fake-nodes.yaml")}},
		},
		Ready: []Check{{
			What:  fmt.Sprintf("%d fake nodes Ready", s.FakeNodes),
			Probe: NodesReady{Selector: "type=kwok", Count: s.FakeNodes},
		}},
		After: []string{"kwok"},
	}
}

func TrainingAPIRegistration(c Config) *Component {
	return &Component{
		Name: "training-apiservice",
		Steps: []Step{
			Log{fmt.Sprintf("registering APIService %s -> 127.0.0.1:%d (Service %s/%s, ExternalName localhost)",
				TrainingAPIService, c.Settings.TrainingPort, TrainingNamespace, TrainingService)},
			Apply{Files: []string{c.ConfigFile("training-apiservice.yaml")}},
		},
		After: []string{"kube-apiserver"},
	}
}

func TrainingAPIServer(c Config) *Component {
	s := &c.Settings
	args := []string{
		"--secure-port=" + port(s.TrainingPort),
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + c.PKI("training-apiserver.crt"),
		"--tls-private-key-file=" + c.PKI("training-apiserver.key"),
		"--kubeconfig=" + c.Paths.Kubeconfig(),
		"--authentication-kubeconfig=" + c.Paths.Kubeconfig(),
		"--authorization-kubeconfig=" + c.Paths.Kubeconfig(),
		// As installed: requests without credentials get 401, but for the
		// health checks.
		"--anonymous-auth=false",
		"--embedded-etcd-dir=" + c.dir("training-etcd"),
		// Test data only, like kube-apiserver's etcd.
		"--embedded-etcd-unsafe-no-fsync",
		// The runtimes a job can name at once, on the image the real
		// nodes run, as installed.
		"--shipped-runtimes-image=" + trainingImage,
	}
	return &Component{
		Name:   "training-apiserver",
		Binary: c.Bin("training-apiserver"),
		Args:   append(args, s.TrainingAPIServerExtraArgs...),
		Env:    s.TrainingAPIServerEnv,
		Ports:  []Port{{"LOCAL_TRAINING_PORT", s.TrainingPort}},
		// It waits up to its request timeout for the watches kube-apiserver
		// proxies to it.
		StopTimeout: 10 * time.Second,
		Ready: []Check{
			{
				What:  "training-apiserver /readyz on 127.0.0.1:" + port(s.TrainingPort),
				Probe: GetURL{URL: "https://127.0.0.1:" + port(s.TrainingPort) + "/readyz", CA: c.PKI("training-ca.crt")},
			},
			{
				What:  "APIService " + TrainingAPIService + " Available",
				Probe: ConditionTrue{Path: "/apis/apiregistration.k8s.io/v1/apiservices/" + TrainingAPIService, Type: "Available"},
			},
		},
		After:       []string{"training-apiservice"},
		Restartable: true,
	}
}

func TrainingControllerManager(c Config) *Component {
	s := &c.Settings
	args := []string{
		"--kubeconfig=" + c.Paths.Kubeconfig(),
		"--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:" + port(s.TrainingMetricsPort),
		"--health-probe-bind-address=127.0.0.1:" + port(s.TrainingHealthPort),
	}
	if !s.TrainingMetricsSecure {
		args = append(args, "--metrics-secure=false")
	}
	health := "http://127.0.0.1:" + port(s.TrainingHealthPort)
	// It finds the gang schedulers and Kueue by discovery when it starts:
	// their APIs are served first.
	after := []string{"training-apiserver"}
	if s.SchedulerPlugins {
		after = append(after, "scheduler-plugins-crd")
	}
	if s.Kueue {
		after = append(after, "kueue-install")
	}
	return &Component{
		Name:   "training-controller-manager",
		Binary: c.Bin("training-controller-manager"),
		Args:   append(args, s.TrainingControllerManagerExtraArgs...),
		Ports:  []Port{{"LOCAL_TRAINING_METRICS_PORT", s.TrainingMetricsPort}, {"LOCAL_TRAINING_HEALTH_PORT", s.TrainingHealthPort}},
		Ready: []Check{{
			What:  "training-controller-manager health probe on 127.0.0.1:" + port(s.TrainingHealthPort),
			Probe: Health{Base: health},
		}},
		After:       after,
		Restartable: true,
	}
}

// trainingRoles are what an installation adds beside our two components.
func TrainingRoles(c Config) *Component {
	base := c.Paths.Repo + "/artifacts/deploy/base/"
	return &Component{
		Name: "training-roles",
		Steps: []Step{
			Log{"installing the user roles, the progress reporters' role, the PriorityClasses and the controller's priority level of artifacts/deploy"},
			// The same user roles as installed, so kubectl --as a user bound to
			// view, edit or admin behaves as in a cluster; every service account
			// may report progress (the server takes it from the job's own pods
			// only); the PriorityClasses t9kScheduler.priority maps to; the
			// controller's API Priority and Fairness level.
			Apply{Files: []string{base + "rbac-users.yaml", base + "rbac-progress.yaml", base + "priorityclasses.yaml", base + "flowcontrol.yaml"}},
		},
		After: []string{"training-controller-manager"},
	}
}

func DefaultServiceAccount(c Config) *Component {
	return &Component{
		Name: "default-serviceaccount",
		Ready: []Check{{
			What:  "serviceaccount default in namespace default",
			Probe: ObjectExists{Path: "/api/v1/namespaces/default/serviceaccounts/default"},
		}},
		After: []string{"kube-controller-manager"},
	}
}
