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

package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// The pod template checks below are a deliberate subset of what the
// Kubernetes API server checks when the controller creates the pods (that
// code cannot be imported here). They catch the mistakes users make most,
// early and with a path into the job, so a job is not accepted only to fail
// at pod creation. Anything not checked here is still checked then.

var supportedProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

// validatePodTemplate checks the pod template of one replica type.
// The template's restartPolicy is accepted whatever it says: pods are always
// created with Never and the replica's restartPolicy decides replacements.
func (k *kindRules) validatePodTemplate(template *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	metaPath := fldPath.Child("metadata")
	allErrs := metav1validation.ValidateLabels(template.Labels, metaPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(template.Annotations, metaPath.Child("annotations"))...)

	podPath := fldPath.Child("spec")
	pod := &template.Spec
	volumes, errs := validateVolumes(pod.Volumes, podPath.Child("volumes"))
	allErrs = append(allErrs, errs...)

	if len(pod.Containers) == 0 {
		allErrs = append(allErrs, field.Required(podPath.Child("containers"), fmt.Sprintf(
			"at least one container; the training container is the one named %q, else the first", k.trainingContainer)))
	}
	// Container names are unique across regular and init containers.
	names := make(map[string]bool, len(pod.InitContainers)+len(pod.Containers))
	for i := range pod.InitContainers {
		allErrs = append(allErrs, validateContainer(&pod.InitContainers[i], volumes, names, podPath.Child("initContainers").Index(i))...)
	}
	for i := range pod.Containers {
		allErrs = append(allErrs, validateContainer(&pod.Containers[i], volumes, names, podPath.Child("containers").Index(i))...)
	}
	if len(pod.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(podPath.Child("ephemeralContainers"),
			"cannot be set in a pod template; ephemeral containers are added to running pods"))
	}
	if i := batch.TrainingContainer(pod.Containers, k.trainingContainer); i >= 0 {
		allErrs = append(allErrs, k.validateRendezvousPorts(&pod.Containers[i], podPath.Child("containers").Index(i))...)
	}
	return allErrs
}

// validateRendezvousPorts checks the training container's port that the
// replicas reach each other on: the framework speaks TCP on it.
func (k *kindRules) validateRendezvousPorts(c *corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, port := range c.Ports {
		if contains(k.rendezvousPorts, port.Name) && (port.Protocol == corev1.ProtocolUDP || port.Protocol == corev1.ProtocolSCTP) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ports").Index(i).Child("protocol"), string(port.Protocol),
				fmt.Sprintf("must be TCP: %s replicas reach each other over TCP on the port named %q", k.framework, port.Name)))
		}
	}
	return allErrs
}

// validateVolumes checks volume names and returns the set of them, for
// volume mounts to refer to.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]bool, field.ErrorList) {
	var allErrs field.ErrorList
	names := make(map[string]bool, len(volumes))
	for i, v := range volumes {
		allErrs = append(allErrs, validateUniqueName(v.Name, names, fldPath.Index(i).Child("name"))...)
	}
	return names, allErrs
}

// validateUniqueName checks a name that must be a DNS-1123 label unique
// among those in seen, and adds it to seen.
func validateUniqueName(name string, seen map[string]bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case name == "":
		allErrs = append(allErrs, field.Required(fldPath, ""))
	case seen[name]:
		allErrs = append(allErrs, field.Duplicate(fldPath, name))
	default:
		for _, msg := range utilvalidation.IsDNS1123Label(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
		}
	}
	seen[name] = true
	return allErrs
}

// validateContainer checks one container. names holds the container names
// seen so far in the pod and receives this one.
func validateContainer(c *corev1.Container, volumes, names map[string]bool, fldPath *field.Path) field.ErrorList {
	allErrs := validateUniqueName(c.Name, names, fldPath.Child("name"))
	allErrs = append(allErrs, validateImage(c.Image, fldPath.Child("image"))...)
	allErrs = append(allErrs, validatePorts(c.Ports, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	return allErrs
}

// validateImage checks that an image is named, without stray whitespace.
func validateImage(image string, fldPath *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(fldPath, "the container image")}
	}
	if strings.TrimSpace(image) != image {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// validatePorts checks a container's ports: numbers in range, names valid
// and unique within the container, and a known protocol.
func validatePorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := make(map[string]bool, len(ports))
	for i, port := range ports {
		portPath := fldPath.Index(i)
		if port.Name != "" {
			if names[port.Name] {
				allErrs = append(allErrs, field.Duplicate(portPath.Child("name"), port.Name))
			} else {
				for _, msg := range utilvalidation.IsValidPortName(port.Name) {
					allErrs = append(allErrs, field.Invalid(portPath.Child("name"), port.Name, msg))
				}
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(portPath.Child("containerPort"), ""))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(portPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(portPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		if port.Protocol != "" && !contains(supportedProtocols, port.Protocol) {
			allErrs = append(allErrs, field.NotSupported(portPath.Child("protocol"), string(port.Protocol), supportedProtocols))
		}
	}
	return allErrs
}

// validateEnv checks environment variables: a name the container runtime
// accepts, and at most one source of the value.
//
// Names follow the relaxed rule Kubernetes applies since 1.34 (printable ASCII
// other than '='), so that every name the cluster would accept is accepted here.
func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		envPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(envPath.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(envPath.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom == nil {
			continue
		}
		from := ev.ValueFrom
		sources := 0
		for _, set := range []bool{from.FieldRef != nil, from.ResourceFieldRef != nil, from.ConfigMapKeyRef != nil,
			from.SecretKeyRef != nil, from.FileKeyRef != nil} {
			if set {
				sources++
			}
		}
		fromPath := envPath.Child("valueFrom")
		switch {
		case ev.Value != "":
			allErrs = append(allErrs, field.Invalid(fromPath, "", "may not be specified when `value` is not empty"))
		case sources == 0:
			allErrs = append(allErrs, field.Required(fromPath,
				"must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
		case sources > 1:
			allErrs = append(allErrs, field.Invalid(fromPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

// validateVolumeMounts checks that each mount refers to a volume of the pod
// and that no two mounts share a path.
func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	paths := make(map[string]bool, len(mounts))
	for i, m := range mounts {
		mountPath := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(mountPath.Child("name"), ""))
		} else if !volumes[m.Name] {
			allErrs = append(allErrs, field.NotFound(mountPath.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			allErrs = append(allErrs, field.Required(mountPath.Child("mountPath"), ""))
		case paths[m.MountPath]:
			allErrs = append(allErrs, field.Invalid(mountPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths[m.MountPath] = true
	}
	return allErrs
}

// validateResources checks compute resources: no negative quantity, no
// request above its limit, and for resources that cannot be overcommitted
// (extended resources such as GPUs, and huge pages) a limit equal to any
// request.
func validateResources(res *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limitsPath, requestsPath := fldPath.Child("limits"), fldPath.Child("requests")
	for _, name := range sortedResourceNames(res.Limits) {
		if q := res.Limits[name]; q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(limitsPath.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for _, name := range sortedResourceNames(res.Requests) {
		q := res.Requests[name]
		reqPath := requestsPath.Key(string(name))
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(reqPath, q.String(), "must be greater than or equal to 0"))
			continue
		}
		limit, hasLimit := res.Limits[name]
		overcommittable := !isExtendedResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
		switch {
		case hasLimit && overcommittable && q.Cmp(limit) > 0:
			allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case hasLimit && !overcommittable && q.Cmp(limit) != 0:
			allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case !hasLimit && !overcommittable:
			allErrs = append(allErrs, field.Forbidden(reqPath, fmt.Sprintf("%s cannot be overcommitted: set a limit equal to the request", name)))
		}
	}
	return allErrs
}

// isExtendedResource reports whether a resource is provided by a device
// plugin or the like rather than by Kubernetes itself: a domain-prefixed name
// outside kubernetes.io.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
