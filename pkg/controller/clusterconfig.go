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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// writeClusterConfig writes the job's cluster ConfigMap, the addresses its
// pods refer to (podbuilder.ClusterConfigMapName), before the pods that
// read it are created: a container whose ConfigMap is missing does not
// start. It is written whenever pods are about to be created, so that new
// pods never read the addresses of an earlier shape of the job (an elastic
// job scaled); an update that changes nothing writes nothing to etcd.
//
// The controller may create and update ConfigMaps but neither read nor
// list them (its role, artifacts/deploy): the name holds the job's UID, so
// one that exists already is the job's, or was made for the job by
// someone who could write it anyway; the update makes it the job's again.
func (r *reconciler) writeClusterConfig(ctx context.Context, b *podbuilder.Builder) error {
	desired, err := b.ClusterConfigMap()
	if err != nil || desired == nil {
		return err
	}
	configMaps := r.c.kubeClient.CoreV1().ConfigMaps(r.key.Namespace)
	_, err = configMaps.Create(ctx, desired, metav1.CreateOptions{})
	switch {
	case err == nil:
		r.jobOwner.Normalf(owner.ReasonSuccessfulCreate, "Created config map %s", desired.Name)
		return nil
	case apierrors.IsAlreadyExists(err):
		_, err = configMaps.Update(ctx, desired, metav1.UpdateOptions{})
	}
	switch {
	case err == nil, apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		r.jobOwner.Warningf(owner.ReasonFailedCreate, "Error writing config map %s: %v", desired.Name, err)
		return fmt.Errorf("writing config map %s: %w", desired.Name, err)
	}
}
