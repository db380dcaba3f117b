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

// TensorBoard of a job: a Deployment and a Service named <job>-tensorboard,
// serving on port 6006.
const (
	TensorBoardPort = 6006
	// LabelTensorBoard marks the TensorBoard pods of a job (value: the job
	// name). They do not carry the job-name label, so the job's headless
	// Service does not select them and the pod informer does not watch them.
	LabelTensorBoard = v1beta1.GroupName + "/tensorboard"
	// AnnotationTensorBoardSpec holds a hash of the tensorboardSpec the
	// Deployment was built from; a different hash updates the Deployment.
	AnnotationTensorBoardSpec = v1beta1.GroupName + "/tensorboard-spec-hash"
	// tensorBoardLogRoot is where the log PVCs are mounted, one directory
	// per PVC.
	tensorBoardLogRoot = "/t9k/logs"
	tensorBoardName    = "tensorboard"
)

// Actions recorded in status.tensorboard.action.
const (
	tensorBoardActionCreate = "Create"
	tensorBoardActionUpdate = "Update"
)

// TensorBoardName is the name of a job's TensorBoard Deployment and Service,
// <job>-tensorboard.
func TensorBoardName(job string) string { return batch.TensorBoardName(job) }

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

func tensorBoardHash(tb *v1beta1.TensorBoardSpec) string {
	data, _ := json.Marshal(tb)
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%x", h.Sum64())
}

// newTensorBoard builds the TensorBoard Deployment. Each PVC is mounted
// read-only once at /t9k/logs/<pvc>. One log directory is passed as
// --logdir; several as --logdir_spec=<pvc>/<path>:<dir>,... so that
// TensorBoard names each run after where it comes from.
func (r *reconciler) newTensorBoard(tb *v1beta1.TensorBoardSpec) (*appsv1.Deployment, error) {
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
			root = path.Join(tensorBoardLogRoot, pvc)
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
	var args []string
	if len(dirs) == 1 {
		args = []string{"--logdir=" + dirs[0]}
	} else {
		spec := make([]string, len(dirs))
		for i := range dirs {
			spec[i] = names[i] + ":" + dirs[i]
		}
		args = []string{"--logdir_spec=" + strings.Join(spec, ",")}
	}
	args = append(args, "--bind_all", fmt.Sprintf("--port=%d", TensorBoardPort))

	container := corev1.Container{
		Name:         tensorBoardName,
		Image:        tb.Image,
		Command:      []string{"tensorboard"},
		Args:         args,
		Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: TensorBoardPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: mounts,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt32(TensorBoardPort),
		}}},
	}
	if tb.Resources != nil {
		container.Resources = *tb.Resources.DeepCopy()
	}
	podLabels := r.tensorBoardSelector()
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            TensorBoardName(r.job.GetName()),
			Namespace:       r.job.GetNamespace(),
			Labels:          r.asOwner().Labels(),
			Annotations:     map[string]string{AnnotationTensorBoardSpec: tensorBoardHash(tb)},
			OwnerReferences: []metav1.OwnerReference{r.asOwner().ControllerRef()},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.tensorBoardSelector()},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container},
					Volumes:    volumes,
				},
			},
		},
	}, nil
}

func (r *reconciler) tensorBoardSelector() map[string]string {
	return map[string]string{LabelTensorBoard: r.job.GetName(), v1beta1.LabelJobKind: r.kind.Kind()}
}

func (r *reconciler) newTensorBoardService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            TensorBoardName(r.job.GetName()),
			Namespace:       r.job.GetNamespace(),
			Labels:          r.asOwner().Labels(),
			OwnerReferences: []metav1.OwnerReference{r.asOwner().ControllerRef()},
		},
		Spec: corev1.ServiceSpec{
			Selector: r.tensorBoardSelector(),
			Ports: []corev1.ServicePort{{
				Name: "http", Port: TensorBoardPort, TargetPort: intstr.FromInt32(TensorBoardPort), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// reconcileTensorBoard runs the TensorBoard the spec asks for (also after
// the job finished: that is when its logs are read most), removes one that
// is no longer asked for, and reports it in status.tensorboard.
func (r *reconciler) reconcileTensorBoard(ctx context.Context) error {
	tb := r.spec.TensorboardSpec
	if tb == nil {
		r.status.Tensorboard = nil
		return r.removeTensorBoard(ctx)
	}
	st := &v1beta1.DependentStatus{Name: tensorBoardName, Type: corev1.EventTypeNormal}
	if prev := r.old.Tensorboard; prev != nil {
		st.Action = prev.Action
	}
	r.status.Tensorboard = st
	desired, err := r.newTensorBoard(tb)
	if err != nil {
		st.Reason, st.Note, st.Type = ReasonTensorBoardInvalidSpec, err.Error(), corev1.EventTypeWarning
		return nil
	}
	dep, err := r.ensureTensorBoardDeployment(ctx, st, desired)
	if err != nil || st.Reason == owner.ReasonNameConflict {
		return err
	}
	if _, err := owner.Ensure(ctx, r.asOwner(), owner.Services(r.c.kubeClient, r.c.serviceIndexer, r.key.Namespace, "the TensorBoard cannot be reached through it"),
		r.newTensorBoardService()); err != nil {
		return err
	}
	tensorBoardAvailability(st, dep)
	return nil
}

// removeTensorBoard deletes the job's TensorBoard Deployment and Service.
func (r *reconciler) removeTensorBoard(ctx context.Context) error {
	name := TensorBoardName(r.job.GetName())
	const why = "no TensorBoard is asked for"
	dep, err := cachedObject[*appsv1.Deployment](r.c.deploymentIndexer, r.key.Namespace, name)
	if err != nil {
		return fmt.Errorf("getting deployment %s: %w", name, err)
	}
	if dep != nil {
		if err := owner.Delete(ctx, r.asOwner(), "deployment", dep, why, r.c.kubeClient.AppsV1().Deployments(r.key.Namespace).Delete); err != nil {
			return err
		}
	}
	svc, err := cachedObject[*corev1.Service](r.c.serviceIndexer, r.key.Namespace, name)
	if err != nil {
		return fmt.Errorf("getting service %s: %w", name, err)
	}
	if svc != nil {
		return owner.Delete(ctx, r.asOwner(), "service", svc, why, r.c.kubeClient.CoreV1().Services(r.key.Namespace).Delete)
	}
	return nil
}

// ensureTensorBoardDeployment creates, adopts or updates the TensorBoard's
// Deployment and records in st what it did; it returns the Deployment, nil
// while there is none.
func (r *reconciler) ensureTensorBoardDeployment(ctx context.Context, st *v1beta1.DependentStatus,
	desired *appsv1.Deployment) (*appsv1.Deployment, error) {
	got, err := owner.Ensure(ctx, r.asOwner(), owner.Deployments(r.c.kubeClient, r.c.deploymentIndexer, r.key.Namespace, "the TensorBoard does not run"), desired)
	switch {
	case err != nil:
		st.Reason, st.Note, st.Type = ReasonTensorBoardCreateFailed, err.Error(), corev1.EventTypeWarning
		return nil, err
	case got.Taken:
		st.Reason, st.Type = owner.ReasonNameConflict, corev1.EventTypeWarning
		st.Note = fmt.Sprintf("deployment %s exists and is not controlled by the job", desired.Name)
		return nil, nil
	case got.Created:
		st.Action = tensorBoardActionCreate
		return got.Obj, nil
	}
	dep := got.Obj
	if dep == nil || dep.Annotations[AnnotationTensorBoardSpec] == desired.Annotations[AnnotationTensorBoardSpec] {
		return dep, nil
	}
	update := dep.DeepCopy()
	if update.Annotations == nil {
		update.Annotations = map[string]string{}
	}
	update.Annotations[AnnotationTensorBoardSpec] = desired.Annotations[AnnotationTensorBoardSpec]
	update.Spec.Template = desired.Spec.Template
	updated, err := r.c.kubeClient.AppsV1().Deployments(r.key.Namespace).Update(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating deployment %s: %w", dep.Name, err)
	}
	st.Action = tensorBoardActionUpdate
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulUpdate, "Updated deployment %s: the tensorboardSpec changed", dep.Name)
	return updated, nil
}

// tensorBoardAvailability reports the Deployment's availability in st.
func tensorBoardAvailability(st *v1beta1.DependentStatus, dep *appsv1.Deployment) {
	if dep == nil {
		st.Reason, st.Note = ReasonTensorBoardCreating, "waiting for the deployment to appear"
		return
	}
	st.Dependent = &corev1.ObjectReference{
		APIVersion: appsv1.SchemeGroupVersion.String(),
		Kind:       "Deployment",
		Namespace:  dep.Namespace,
		Name:       dep.Name,
		UID:        dep.UID,
	}
	st.Reason, st.Note = ReasonTensorBoardCreating, "waiting for the deployment to become available"
	for _, c := range dep.Status.Conditions {
		if c.Type != appsv1.DeploymentAvailable {
			continue
		}
		st.Note = c.Message
		if c.Status == corev1.ConditionTrue {
			st.Ready, st.Reason = true, ReasonTensorBoardAvailable
		} else {
			st.Reason = ReasonTensorBoardUnavailable
		}
	}
}
