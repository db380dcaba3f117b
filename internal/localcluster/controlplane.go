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
	"fmt"
	"net/http"
	"strconv"
	"time"
)

func (c *Cluster) port(p int) string { return strconv.Itoa(p) }

func (c *Cluster) etcd() *Component {
	s := &c.Settings
	client := "http://127.0.0.1:" + c.port(s.EtcdPort)
	peer := "http://127.0.0.1:" + c.port(s.EtcdPeerPort)
	return &Component{
		Name:   "etcd",
		Binary: c.bin("etcd"),
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
		Ready:       []Check{{What: "etcd on 127.0.0.1:" + c.port(s.EtcdPort), Probe: probeURL(client+"/health", plainHTTP)}},
		After:       []string{"files"},
		Restartable: true,
	}
}

func (c *Cluster) kubeAPIServer() *Component {
	s := &c.Settings
	pki := c.pki
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + c.port(s.EtcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + c.port(s.APIServerPort),
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
		args = append(args, "--egress-selector-config-file="+c.config("egress-selector.yaml"),
			"--kubelet-preferred-address-types=InternalIP,Hostname")
	}
	args = append(args, s.APIServerExtraArgs...)
	after := []string{"etcd"}
	if len(c.Nodes) > 0 {
		after = append(after, "nodeproxy")
	}
	return &Component{
		Name:        "kube-apiserver",
		Binary:      c.bin("kube-apiserver"),
		Args:        args,
		Ports:       []Port{{"LOCAL_APISERVER_PORT", s.APIServerPort}},
		StopTimeout: 20 * time.Second,
		Ready: []Check{{
			What:  "kube-apiserver /readyz on 127.0.0.1:" + c.port(s.APIServerPort),
			Probe: probeURL(c.server()+"/readyz", c.kube.client),
		}},
		After:       after,
		Restartable: true,
	}
}

func (c *Cluster) kubeControllerManager() *Component {
	s := &c.Settings
	kc := c.pki("kube-controller-manager.kubeconfig")
	args := []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + c.port(s.KCMPort),
		"--cert-dir=" + c.dir("kube-controller-manager"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.pki("sa.key"),
		"--root-ca-file=" + c.pki("ca.crt"),
		"--cluster-signing-cert-file=" + c.pki("ca.crt"),
		"--cluster-signing-key-file=" + c.pki("ca.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
	if s.GangWorkload {
		args = append(args, "--feature-gates=GenericWorkload=true")
	}
	return &Component{
		Name:   "kube-controller-manager",
		Binary: c.bin("kube-controller-manager"),
		Args:   args,
		Ports:  []Port{{"LOCAL_KCM_PORT", s.KCMPort}},
		Ready: []Check{{
			What:  "kube-controller-manager /healthz on 127.0.0.1:" + c.port(s.KCMPort),
			Probe: probeURL("https://127.0.0.1:"+c.port(s.KCMPort)+"/healthz", insecureHTTPS),
		}},
		After:       []string{"kube-apiserver"},
		Restartable: true,
	}
}

// scheduler is kube-scheduler or the second scheduler (scheduler-plugins),
// which differ in binary, configuration and port only.
func (c *Cluster) scheduler(name, binary, setting string, port int, after ...string) *Component {
	kc := c.pki(name + ".kubeconfig")
	args := []string{
		"--config=" + c.config(name+".yaml"),
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + c.port(port),
		"--cert-dir=" + c.dir(name),
		"--leader-elect=false",
	}
	if name == "kube-scheduler" && c.Settings.GangWorkload {
		// Also turns on the GangScheduling plugin of the default profile.
		args = append(args, "--feature-gates=GenericWorkload=true")
	}
	return &Component{
		Name:   name,
		Binary: c.bin(binary),
		Args:   args,
		Ports:  []Port{{setting, port}},
		Ready: []Check{{
			What:  name + " /readyz on 127.0.0.1:" + c.port(port),
			Probe: probeURL("https://127.0.0.1:"+c.port(port)+"/readyz", insecureHTTPS),
		}},
		After:       append([]string{"kube-apiserver"}, after...),
		Restartable: true,
	}
}

func (c *Cluster) kubeScheduler() *Component {
	return c.scheduler("kube-scheduler", "kube-scheduler", "LOCAL_SCHEDULER_PORT", c.Settings.SchedulerPort)
}

func (c *Cluster) schedulerPlugins() *Component {
	return c.scheduler("scheduler-plugins", "kube-scheduler-plugins", "LOCAL_SCHEDULER_PLUGINS_PORT",
		c.Settings.SchedulerPluginsPort, "scheduler-plugins-crd")
}

// schedulerPluginsCRD installs the PodGroup CRD (scheduling.x-k8s.io/v1alpha1,
// the only one coscheduling reads) and the second scheduler's RBAC.
func (c *Cluster) schedulerPluginsCRD() *Component {
	crd := c.Paths.Modules.SchedulerPlugins + "/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
	return &Component{
		Name: "scheduler-plugins-crd",
		Do: func(ctx context.Context) error {
			c.Host.Logf("installing CRD %s and the RBAC of %s", schedulerPluginsCRD, schedulerPluginsName)
			return c.apply(ctx, crd, c.Paths.Hack()+"/scheduler-plugins-rbac.yaml")
		},
		Ready: []Check{{
			What:  "CRD " + schedulerPluginsCRD + " Established",
			Probe: c.kube.conditionTrue("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+schedulerPluginsCRD, "Established"),
		}},
		After: []string{"kube-apiserver"},
	}
}

func (c *Cluster) kwokPolicy() *Component {
	return &Component{
		Name: "kwok-deletes-policy",
		// Before kwok runs: its deletes must behave as a kubelet's.
		Do:    func(ctx context.Context) error { return c.apply(ctx, c.Paths.Hack()+"/kwok-pod-deletes.yaml") },
		After: []string{"kube-apiserver"},
	}
}

func (c *Cluster) kwok() *Component {
	s := &c.Settings
	return &Component{
		Name:   "kwok",
		Binary: c.bin("kwok"),
		Args: []string{
			"--kubeconfig=" + c.pki("kwok.kubeconfig"),
			"--config=" + c.config("kwok-stages.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--cidr=" + kwokPodCIDR,
			"--node-ip=" + kwokNodeIP,
			"--node-port=" + c.port(s.KwokPort),
			"--tls-cert-file=" + c.pki("kwok-kubelet.crt"),
			"--tls-private-key-file=" + c.pki("kwok-kubelet.key"),
			"--node-lease-duration-seconds=40",
			"--server-address=127.0.0.1:" + c.port(s.KwokPort),
		},
		Ports: []Port{{"LOCAL_KWOK_PORT", s.KwokPort}},
		Ready: []Check{{
			What: "kwok /healthz on 127.0.0.1:" + c.port(s.KwokPort),
			Probe: probeURL("https://127.0.0.1:"+c.port(s.KwokPort)+"/healthz", func() (*http.Client, error) {
				return tlsClient(c.pki("ca.crt"), "", "")
			}),
		}},
		After:       []string{"kwok-deletes-policy"},
		Restartable: true,
	}
}

func (c *Cluster) fakeNodes() *Component {
	s := &c.Settings
	return &Component{
		Name: "fake-nodes",
		Do: func(ctx context.Context) error {
			c.Host.Logf("creating %d fake nodes (cpu %s, memory %s, pods %d, nvidia.com/gpu %d each)",
				s.FakeNodes, s.NodeCPU, s.NodeMemory, s.NodePods, s.NodeGPUs)
			return c.apply(ctx, c.config("fake-nodes.yaml"))
		},
		Ready: []Check{{
			What: fmt.Sprintf("%d fake nodes Ready", s.FakeNodes),
			Probe: func(ctx context.Context) error {
				nodes, err := c.kube.items(ctx, "/api/v1/nodes?labelSelector=type%3Dkwok")
				if err != nil {
					return err
				}
				ready := 0
				for _, n := range nodes {
					if conditionStatus(n, "Ready") == "True" {
						ready++
					}
				}
				if ready < s.FakeNodes {
					return fmt.Errorf("%d of %d fake nodes Ready", ready, s.FakeNodes)
				}
				return nil
			},
		}},
		After: []string{"kwok"},
	}
}

func (c *Cluster) trainingAPIService() *Component {
	return &Component{
		Name: "training-apiservice",
		Do: func(ctx context.Context) error {
			c.Host.Logf("registering APIService %s -> 127.0.0.1:%d (Service %s/%s, ExternalName localhost)",
				TrainingAPIService, c.Settings.TrainingPort, TrainingNamespace, TrainingService)
			return c.apply(ctx, c.config("training-apiservice.yaml"))
		},
		After: []string{"kube-apiserver"},
	}
}

func (c *Cluster) trainingAPIServer() *Component {
	s := &c.Settings
	args := []string{
		"--secure-port=" + c.port(s.TrainingPort),
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + c.pki("training-apiserver.crt"),
		"--tls-private-key-file=" + c.pki("training-apiserver.key"),
		"--kubeconfig=" + c.Paths.Kubeconfig(),
		"--authentication-kubeconfig=" + c.Paths.Kubeconfig(),
		"--authorization-kubeconfig=" + c.Paths.Kubeconfig(),
		// As installed: requests without credentials get 401, but for the
		// health checks.
		"--anonymous-auth=false",
		"--embedded-etcd-dir=" + c.dir("training-etcd"),
		// Test data only, like kube-apiserver's etcd.
		"--embedded-etcd-unsafe-no-fsync",
	}
	return &Component{
		Name:   "training-apiserver",
		Binary: c.bin("training-apiserver"),
		Args:   append(args, s.TrainingAPIServerExtraArgs...),
		Env:    s.TrainingAPIServerEnv,
		Ports:  []Port{{"LOCAL_TRAINING_PORT", s.TrainingPort}},
		// It waits up to its request timeout for the watches kube-apiserver
		// proxies to it.
		StopTimeout: 10 * time.Second,
		Ready: []Check{
			{
				What: "training-apiserver /readyz on 127.0.0.1:" + c.port(s.TrainingPort),
				Probe: probeURL("https://127.0.0.1:"+c.port(s.TrainingPort)+"/readyz", func() (*http.Client, error) {
					return tlsClient(c.pki("training-ca.crt"), "", "")
				}),
			},
			{
				What:  "APIService " + TrainingAPIService + " Available",
				Probe: c.kube.conditionTrue("/apis/apiregistration.k8s.io/v1/apiservices/"+TrainingAPIService, "Available"),
			},
		},
		After:       []string{"training-apiservice"},
		Restartable: true,
	}
}

func (c *Cluster) trainingControllerManager() *Component {
	s := &c.Settings
	args := []string{
		"--kubeconfig=" + c.Paths.Kubeconfig(),
		"--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:" + c.port(s.TrainingMetricsPort),
		"--health-probe-bind-address=127.0.0.1:" + c.port(s.TrainingHealthPort),
	}
	if !s.TrainingMetricsSecure {
		args = append(args, "--metrics-secure=false")
	}
	health := "http://127.0.0.1:" + c.port(s.TrainingHealthPort)
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
		Binary: c.bin("training-controller-manager"),
		Args:   append(args, s.TrainingControllerManagerExtraArgs...),
		Ports:  []Port{{"LOCAL_TRAINING_METRICS_PORT", s.TrainingMetricsPort}, {"LOCAL_TRAINING_HEALTH_PORT", s.TrainingHealthPort}},
		Ready: []Check{{
			What:  "training-controller-manager health probe on 127.0.0.1:" + c.port(s.TrainingHealthPort),
			Probe: healthProbe(health),
		}},
		After:       after,
		Restartable: true,
	}
}

// healthProbe holds on 2xx from /readyz or /healthz, or when the server
// answers 404 on both (no probe endpoint registered: it listens, which is
// all there is to check).
func healthProbe(base string) func(context.Context) error {
	return func(ctx context.Context) error {
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
}

// trainingRoles are what an installation adds beside our two components.
func (c *Cluster) trainingRoles() *Component {
	base := c.Paths.Repo + "/artifacts/deploy/base/"
	return &Component{
		Name: "training-roles",
		Do: func(ctx context.Context) error {
			c.Host.Logf("installing the user roles, the progress reporters' role, the PriorityClasses and the controller's priority level of artifacts/deploy")
			// The same user roles as installed, so kubectl --as a user bound to
			// view, edit or admin behaves as in a cluster; every service account
			// may report progress (the server takes it from the job's own pods
			// only); the PriorityClasses t9kScheduler.priority maps to; the
			// controller's API Priority and Fairness level.
			return c.apply(ctx, base+"rbac-users.yaml", base+"rbac-progress.yaml", base+"priorityclasses.yaml", base+"flowcontrol.yaml")
		},
		After: []string{"training-controller-manager"},
	}
}

func (c *Cluster) defaultServiceAccount() *Component {
	return &Component{
		Name: "default-serviceaccount",
		Ready: []Check{{
			What: "serviceaccount default in namespace default",
			Probe: func(ctx context.Context) error {
				_, err := c.kube.get(ctx, "/api/v1/namespaces/default/serviceaccounts/default")
				return err
			},
		}},
		After: []string{"kube-controller-manager"},
	}
}

// dir is a directory in the stack's state.
func (c *Cluster) dir(name string) string { return c.Paths.Dir + "/" + name }
