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

// Package tensorboard runs the TensorBoard a training job asks for: a
// Deployment and a Service named <job>-tensorboard, which read the job's
// training logs from its PVCs, and the job's status.tensorboard. The
// controller calls Keeper.Sync once per reconcile of a job.
package tensorboard

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

// The TensorBoard of a job serves on Port.
const (
	Port = 6006
	// Label marks the TensorBoard pods of a job (value: the job
	// name). They do not carry the job-name label, so the job's headless
	// Service does not select them and the pod informer does not watch them.
	Label = v1beta1.GroupName + "/tensorboard"
	// AnnotationSpec holds a hash of the tensorboardSpec the
	// Deployment was built from; a different hash updates the Deployment.
	AnnotationSpec = v1beta1.GroupName + "/tensorboard-spec-hash"
	// logRoot is where the log PVCs are mounted, one directory
	// per PVC.
	logRoot = "/t9k/logs"
	// statusName is status.tensorboard.name.
	statusName = "tensorboard"
)

// Actions recorded in status.tensorboard.action.
const (
	actionCreate = "Create"
	actionUpdate = "Update"
)

// Reasons of status.tensorboard: the TensorBoard's spec is invalid, its
// objects could not be created, they are being created, its Deployment is
// available or not; owner.ReasonNameConflict when its name is taken.
const (
	ReasonInvalidSpec  = "InvalidSpec"
	ReasonCreateFailed = "CreateFailed"
	ReasonCreating     = "Creating"
	ReasonAvailable    = "Available"
	ReasonUnavailable  = "Unavailable"
)

// Name is the name of a job's TensorBoard Deployment and Service,
// <job>-tensorboard.
func Name(job string) string { return batch.TensorBoardName(job) }

// parseFileset splits t9k://pvc/<pvc>/<path> into the PVC and a clean
// absolute path inside it. It asks no more of the location than that it can
// be split: a job stored before validation asked for more still gets its
// TensorBoard.
func parseFileset(s string) (pvc, dir string, err error) {
	pvc, dir, err = batch.ParseFileset(s)
	if err != nil {
		return "", "", fmt.Errorf("training log fileset %q: %w", s, err)
	}
	return pvc, path.Clean("/" + dir), nil
}

func specHash(tb *v1beta1.TensorBoardSpec) string {
	data, _ := json.Marshal(tb)
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%x", h.Sum64())
}

// Deployment builds the TensorBoard Deployment. Each PVC is mounted
// read-only once at /t9k/logs/<pvc>. One log directory is passed as
// --logdir; several as --logdir_spec=<pvc>/<path>:<dir>,... so that
// TensorBoard names each run after where it comes from.
func Deployment(job *owner.Job, tb *v1beta1.TensorBoardSpec) (*appsv1.Deployment, error) {
	if len(tb.TrainingLogFilesets) == 0 {
		return nil, fmt.Errorf("tensorboardSpec has no trainingLogFilesets")
	}
	var (
		volumes []corev1.Volume
		mounts  []corev1.VolumeMount
		dirs    []string
		names   []string
		mounted = map[string]string{}
	)
	for _, fs := range tb.TrainingLogFilesets {
		pvc, dir, err := parseFileset(fs)
		if err != nil {
			return nil, err
		}
		root, ok := mounted[pvc]
		if !ok {
			vol := fmt.Sprintf("logs-%d", len(volumes))
			root = path.Join(logRoot, pvc)
			mounted[pvc] = root
			volumes = append(volumes, corev1.Volume{
				Name: vol,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: pvc, ReadOnly: true,
				}},
			})
			mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: root, ReadOnly: true})
		}
		dirs = append(dirs, path.Join(root, dir))
		names = append(names, strings.TrimSuffix(pvc+dir, "/"))
	}
	args := append(logDirArgs(dirs, names), "--bind_all", fmt.Sprintf("--port=%d", Port))

	container := corev1.Container{
		Name:         statusName,
		Image:        tb.Image,
		Command:      []string{"tensorboard"},
		Args:         args,
		Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: Port, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: mounts,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt32(Port),
		}}},
	}
	if tb.Resources != nil {
		container.Resources = *tb.Resources.DeepCopy()
	}
	podLabels := selector(job)
	meta := job.ObjectMeta(Name(job.Object.GetName()))
	meta.Annotations = map[string]string{AnnotationSpec: specHash(tb)}
	return &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector(job)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container},
					Volumes:    volumes,
				},
			},
		},
	}, nil
}

// selector selects the TensorBoard's pods.
func selector(job *owner.Job) map[string]string {
	return map[string]string{Label: job.Object.GetName(), v1beta1.LabelJobKind: job.Kind}
}

// Service builds the Service in front of the TensorBoard.
func Service(job *owner.Job) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: job.ObjectMeta(Name(job.Object.GetName())),
		Spec: corev1.ServiceSpec{
			Selector: selector(job),
			Ports: []corev1.ServicePort{{
				Name: "http", Port: Port, TargetPort: intstr.FromInt32(Port), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// logDirArgs points TensorBoard at the log directories: one as --logdir,
// several as --logdir_spec, each under its name.
func logDirArgs(dirs, names []string) []string {
	if len(dirs) == 1 {
		return []string{"--logdir=" + dirs[0]}
	}
	spec := make([]string, len(dirs))
	for i := range dirs {
		spec[i] = names[i] + ":" + dirs[i]
	}
	return []string{"--logdir_spec=" + strings.Join(spec, ",")}
}
