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

package jobpods

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Jobs are often written in bursts from one template: a sweep, a pipeline,
// a benchmark. The dry run of a pod that kube-apiserver accepted a moment
// ago in the same namespace, from a job that differs only in its name, is
// not sent again: the acceptance is remembered for acceptedTTL. Only
// acceptances are remembered, so a refusal is always current, and the
// controller's own creates are judged by the cluster in full anyway: a
// policy changed within the TTL shows in its FailedCreate events.
const (
	acceptedTTL     = 10 * time.Second
	acceptedEntries = 4096
)

// acceptedPods remembers the pods kube-apiserver accepted in dry runs.
type acceptedPods struct {
	clock clock.PassiveClock
	cache *lru.Cache // key → expiry (time.Time)
}

func newAcceptedPods(clk clock.PassiveClock) *acceptedPods {
	return &acceptedPods{clock: clk, cache: lru.New(acceptedEntries)}
}

// key identifies a pod up to the name of its job, which the controller
// puts in the pod's name, its job-name label, its subdomain, the replicas'
// addresses and the job's name in its environment, and the names of the
// job's cluster ConfigMap and SSH Secret it refers to: the pods of two jobs
// written from one template share a key. ok is false when the pod cannot be encoded; it
// is then always dry-run.
func (c *acceptedPods) key(namespace string, job metav1.Object, pod *corev1.Pod) (key string, ok bool) {
	jobName := job.GetName()
	if c == nil || jobName == "" {
		return "", false
	}
	const placeholder = "\x00" // cannot occur in a name
	p := pod.DeepCopy()
	p.Name, p.GenerateName = "", ""
	for k, v := range p.Labels {
		if v == jobName {
			p.Labels[k] = placeholder
		}
	}
	if p.Spec.Subdomain == jobName {
		p.Spec.Subdomain = placeholder
	}
	address := "." + jobName + "." + namespace + ".svc"
	clusterConfig, sshSecret := podbuilder.ClusterConfigMapName(job), podbuilder.SSHSecretName(job)
	for _, containers := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range containers {
			for j := range containers[i].Env {
				e := &containers[i].Env[j]
				if e.Name == v1beta1.EnvJobName && e.Value == jobName {
					e.Value = placeholder
				}
				e.Value = strings.ReplaceAll(e.Value, address, "."+placeholder+"."+namespace+".svc")
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == clusterConfig {
					e.ValueFrom.ConfigMapKeyRef.Name = placeholder
				}
			}
		}
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.ConfigMap != nil && v.ConfigMap.Name == clusterConfig {
			v.ConfigMap.Name = placeholder
		}
		if v.Secret != nil && v.Secret.SecretName == sshSecret {
			v.Secret.SecretName = placeholder
		}
	}
	// Protobuf, not JSON: a fifth of the CPU, and as deterministic (map
	// keys are written sorted).
	raw, err := p.Marshal()
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(raw)
	return namespace + "/" + hex.EncodeToString(sum[:]), true
}

// accepted says whether the pod was accepted within the TTL.
func (c *acceptedPods) accepted(key string) bool {
	v, ok := c.cache.Get(key)
	if !ok {
		return false
	}
	if !c.clock.Now().Before(v.(time.Time)) {
		c.cache.Remove(key)
		return false
	}
	return true
}

// accept remembers an accepted pod.
func (c *acceptedPods) accept(key string) {
	c.cache.Add(key, c.clock.Now().Add(acceptedTTL))
}
