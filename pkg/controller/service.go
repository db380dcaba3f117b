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
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// newService builds the job's headless Service <job>: it gives every
// replica the DNS name <type>-<index>.<job>.<namespace>.svc, also before
// the replica is ready, since replicas look each other up while starting.
func (r *reconciler) newService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            r.job.GetName(),
			Namespace:       r.job.GetNamespace(),
			Labels:          r.jobLabels(),
			OwnerReferences: []metav1.OwnerReference{r.controllerRef()},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{v1beta1.LabelJobName: r.job.GetName()},
			Ports:                    r.servicePorts(),
		},
	}
}

// servicePorts are the ports of the training containers of every replica
// type, each port number once; when none declares a port, the kind's
// default port.
func (r *reconciler) servicePorts() []corev1.ServicePort {
	var ports []corev1.ServicePort
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	seenPort := map[key]bool{}
	seenName := map[string]bool{}
	for _, g := range r.topo.Groups {
		ci := trainingContainer(r.kind, &g.Spec.Template.Spec)
		if ci < 0 {
			continue
		}
		for _, p := range g.Spec.Template.Spec.Containers[ci].Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			k := key{p.ContainerPort, proto}
			if p.ContainerPort <= 0 || seenPort[k] {
				continue
			}
			seenPort[k] = true
			name := p.Name
			if name == "" || seenName[name] {
				name = fmt.Sprintf("port-%d", p.ContainerPort)
				if proto != corev1.ProtocolTCP {
					name = fmt.Sprintf("%s-%d", strings.ToLower(string(proto)), p.ContainerPort)
				}
			}
			seenName[name] = true
			ports = append(ports, corev1.ServicePort{
				Name:       name,
				Port:       p.ContainerPort,
				TargetPort: intstr.FromInt32(p.ContainerPort),
				Protocol:   proto,
			})
		}
	}
	if len(ports) == 0 {
		ports = []corev1.ServicePort{{
			Name:       r.kind.PortNames()[0],
			Port:       r.kind.DefaultPort(),
			TargetPort: intstr.FromInt32(r.kind.DefaultPort()),
			Protocol:   corev1.ProtocolTCP,
		}}
	}
	return ports
}

// ensureService creates the job's Service, or adopts an orphan that carries
// the job's labels. A Service of that name that belongs to something else is
// reported and left alone.
func (r *reconciler) ensureService(ctx context.Context) error {
	name := r.job.GetName()
	svc, err := cachedObject[*corev1.Service](r.c.serviceIndexer, r.key.Namespace, name)
	switch {
	case err != nil:
		return fmt.Errorf("getting service %s: %w", name, err)
	case svc == nil:
		created, err := r.c.kubeClient.CoreV1().Services(r.key.Namespace).Create(ctx, r.newService(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Either the cache is behind, or the name is someone else's.
			existing, err := r.c.kubeClient.CoreV1().Services(r.key.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("looking at service %s: %w", name, err)
			}
			return r.checkService(ctx, existing)
		}
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating service %s: %v", name, err)
			return fmt.Errorf("creating service %s: %w", name, err)
		}
		r.logger.V(2).Info("Created service", "service", klog.KObj(created))
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created service %s", name)
		return nil
	default:
		return r.checkService(ctx, svc)
	}
}

func (r *reconciler) checkService(ctx context.Context, svc *corev1.Service) error {
	if r.controlledByJob(svc) {
		return nil
	}
	if !r.adoptable(svc) {
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonNameConflict,
			"Service %s exists and is not controlled by the job; replicas may not find each other", svc.Name)
		return nil
	}
	patch, err := r.adoptionPatch(svc)
	if err != nil {
		return err
	}
	if _, err := r.c.kubeClient.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("adopting service %s: %w", svc.Name, err)
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonAdopted, "Adopted service %s", svc.Name)
	return nil
}
