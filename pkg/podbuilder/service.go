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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Service builds the job's headless Service <job>: it gives every
// replica the DNS name <type>-<index>.<job>.<namespace>.svc, also before
// the replica is ready, since replicas look each other up while starting.
func (b *Builder) Service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            b.Job.GetName(),
			Namespace:       b.Job.GetNamespace(),
			Labels:          b.labels(),
			OwnerReferences: []metav1.OwnerReference{b.controllerRef()},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{v1beta1.LabelJobName: b.Job.GetName()},
			Ports:                    b.servicePorts(),
		},
	}
}

// servicePorts are the ports of the training containers of every replica
// type, each port number once; when none declares a port, the kind's
// default port, if it has one.
func (b *Builder) servicePorts() []corev1.ServicePort {
	var ports []corev1.ServicePort
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	seenPort := map[key]bool{}
	seenName := map[string]bool{}
	for _, g := range b.Topology.Groups {
		ci := TrainingContainer(b.Adapter, &g.Spec.Template.Spec)
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
	// A kind without a default port (GenericJob) gets a headless Service
	// without ports, which DNS needs none for.
	if len(ports) == 0 && b.Adapter.DefaultPort() > 0 {
		ports = []corev1.ServicePort{{
			Name:       b.Adapter.PortNames()[0],
			Port:       b.Adapter.DefaultPort(),
			TargetPort: intstr.FromInt32(b.Adapter.DefaultPort()),
			Protocol:   corev1.ProtocolTCP,
		}}
	}
	return ports
}
