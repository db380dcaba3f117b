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

package podbuilder

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The job's cluster ConfigMap. What a replica must know of every other
// replica (TF_CONFIG's cluster, a GenericJob's address lists, an XGBoost
// job's workers, an MPI launcher's hostfile) grows with the replica count.
// Written into every pod, it would make each pod grow with the job and the
// job with the square of its size. It is written once instead, into a
// ConfigMap the job owns; the pods refer to it (an env var's valueFrom, a
// volume) and the kubelet fills it in as a container starts, so a replica
// sees the same variables as before while its pod stays the same size
// whatever the replica count.

// ClusterConfigMapName is the name of a job's cluster ConfigMap: the job's
// name and UID, so that it cannot be the ConfigMap of a job deleted earlier
// under the same name, which the garbage collector is about to delete.
func ClusterConfigMapName(job metav1.Object) string { return ownedObjectName(job, "cluster") }

// ownedObjectName is <job>-<what>-<job's UID>, the name of an object the
// controller makes for the job alone.
func ownedObjectName(job metav1.Object, what string) string {
	if job.GetUID() == "" {
		// A preview of a job not yet created; the pod's validation wants
		// a name of the right form.
		return job.GetName() + "-" + what
	}
	return job.GetName() + "-" + what + "-" + string(job.GetUID())
}

// ClusterPublisher is an adapter whose replicas learn the whole job's
// addresses. It publishes them in the job's cluster ConfigMap, and its Env
// and DecoratePod refer to them (clusterEnv, clusterVolume).
type ClusterPublisher interface {
	ClusterValues(t *Topology) (ClusterData, error)
}

// ClusterData is what a job publishes: Env holds values that become
// variables of the same name, Files values mounted as files.
type ClusterData struct {
	Env   map[string]string
	Files map[string]string
}

// The sizes the published values must keep to.
const (
	// MaxEnvStringBytes: Linux starts no program with an environment
	// string ("NAME=value" and its NUL) longer than 32 pages
	// (MAX_ARG_STRLEN, 128 KiB), and the container fails to start.
	MaxEnvStringBytes = 128 * 1024
	// envWrapBytes is room for what a kind writes around a published
	// value in a variable of its own (TF_CONFIG around the cluster).
	envWrapBytes = 256
	// MaxClusterDataBytes: the API refuses a ConfigMap whose data passes
	// 1 MiB.
	MaxClusterDataBytes = 1024 * 1024
)

// ClusterSizeError is a job whose published addresses are too large to
// use: too long for a variable a program can start with, or too large for
// a ConfigMap. Its replica count, names and ports decide it.
type ClusterSizeError struct {
	// What is too large ("variable TENSORSTACK_CLUSTER"), its size and the
	// limit.
	What         string
	Bytes, Limit int
}

func (e *ClusterSizeError) Error() string {
	return fmt.Sprintf("the addresses of the job's %s take %d bytes, over the %d a container can be given: "+
		"fewer replicas, or a shorter job name or namespace, make them fit", e.What, e.Bytes, e.Limit)
}

// Cluster returns what the job publishes, computed once per topology; an
// empty ClusterData for a kind that publishes nothing.
func (t *Topology) Cluster() (ClusterData, error) {
	t.clusterOnce.Do(func() {
		if t.publisher == nil {
			return
		}
		t.cluster, t.clusterErr = t.publisher.ClusterValues(t)
		if t.clusterErr == nil {
			t.clusterErr = t.cluster.sizeError()
		}
	})
	return t.cluster, t.clusterErr
}

// sizeError says whether the data passes a limit, or nil.
func (d ClusterData) sizeError() error {
	total := 0
	for _, name := range sortedKeys(d.Env) {
		value := d.Env[name]
		total += len(name) + len(value)
		if n := len(name) + 1 + len(value) + 1 + envWrapBytes; n > MaxEnvStringBytes {
			return &ClusterSizeError{What: "variable " + name, Bytes: n - envWrapBytes, Limit: MaxEnvStringBytes - envWrapBytes}
		}
	}
	for name, value := range d.Files {
		total += len(name) + len(value)
	}
	if total > MaxClusterDataBytes {
		return &ClusterSizeError{What: "ConfigMap", Bytes: total, Limit: MaxClusterDataBytes}
	}
	return nil
}

// clusterEnv is a variable whose value the kubelet reads from the job's
// cluster ConfigMap, where it is published under the variable's name.
func (t *Topology) clusterEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: t.ClusterConfigMap},
		Key:                  name,
	}}}
}

// clusterVolume is a volume of the job's cluster ConfigMap holding only
// the published files.
func (t *Topology) clusterVolume(volumeName string, files ...string) corev1.Volume {
	items := make([]corev1.KeyToPath, 0, len(files))
	for _, f := range files {
		items = append(items, corev1.KeyToPath{Key: f, Path: f})
	}
	return corev1.Volume{Name: volumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: t.ClusterConfigMap},
		Items:                items,
		DefaultMode:          ptr.To(int32(0o444)),
	}}}
}

// ClusterConfigMap is the job's cluster ConfigMap as the controller keeps
// it, owned by the job; nil for a kind that publishes nothing.
func (b *Builder) ClusterConfigMap() (*corev1.ConfigMap, error) {
	if b.Topology.publisher == nil {
		return nil, nil
	}
	if err := b.Topology.LimitError(); err != nil {
		return nil, err
	}
	data, _ := b.Topology.Cluster()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            b.Topology.ClusterConfigMap,
			Namespace:       b.Job.GetNamespace(),
			Labels:          b.labels(),
			OwnerReferences: []metav1.OwnerReference{b.controllerRef()},
		},
		Data: make(map[string]string, len(data.Env)+len(data.Files)),
	}
	for k, v := range data.Env {
		cm.Data[k] = v
	}
	for k, v := range data.Files {
		cm.Data[k] = v
	}
	return cm, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
