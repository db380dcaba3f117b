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
	"errors"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
	"tensorstack.dev/training/pkg/podbuilder"
)

// podsToJudge returns the pods the controller would build for the job in a,
// or nil when the request makes no new pods to judge: another resource, a
// subresource such as status, or an update after which the controller
// would build the same pods as before. TrainingJobPodValidation dry-runs
// these.
func podsToJudge(a admission.Attributes, o admission.ObjectInterfaces) (v1beta1.TrainingJob, []podbuilder.PodPreview, error) {
	r, err := jobsOf(a, o)
	if r == nil || err != nil {
		return nil, nil, err
	}
	previews, err := r.asRun()
	if err != nil || r.old == nil {
		return r.job, previews, err
	}
	before, err := r.oldAsRun()
	if err != nil {
		return nil, nil, err
	}
	if apiequality.Semantic.DeepEqual(before, previews) {
		return nil, nil, nil
	}
	return r.job, previews, nil
}

// podsToAuthorize returns the pods that the write in a lets the job run and
// that nobody with the right to create pods has written yet, or nil when
// there are none. TrainingJobPodAuthorization asks whether the requesting
// user may create pods exactly when this is not empty.
//
// The rule, on an update, compares the content of pods, never the job's
// mode. Before the update, the job was allowed to run:
//   - its replicas as their templates are written: whoever wrote the
//     templates was asked for the pod right;
//   - its replicas as it runs them now, in debug mode with the commands
//     someone with the pod right chose;
//   - its replicas in debug mode with the default command, with or without
//     their init containers: these run less than the templates do.
//
// After the update, the job may run its templates as written and its pods as
// it runs them now. Any of those outside the set above needs the pod right.
// So pause and resume, from any mode, and debug with the default command
// need none; a debug command of the caller's choosing, a template edit and a
// change of replica counts (which every pod's environment names) do, in any
// mode, also while the job is paused or debugged and its templates do not
// run.
func podsToAuthorize(a admission.Attributes, o admission.ObjectInterfaces) ([]podbuilder.PodPreview, error) {
	r, err := jobsOf(a, o)
	if r == nil || err != nil {
		return nil, err
	}
	asRun, err := r.asRun()
	if err != nil {
		return nil, err
	}
	mayRun, err := podsAllowedAfter(r.job, asRun)
	if err != nil || r.old == nil {
		return mayRun, err
	}
	oldAsRun, err := r.oldAsRun()
	if err != nil {
		return nil, err
	}
	allowed, err := podsAllowedBefore(r.old, oldAsRun)
	if err != nil {
		return nil, err
	}
	var unwritten []podbuilder.PodPreview
	for _, preview := range mayRun {
		if !containsPod(allowed, preview) {
			unwritten = append(unwritten, preview)
		}
	}
	return unwritten, nil
}

// podsAllowedAfter are the pods a job written now may run: its pods as it
// runs them in its mode (asRun, its Preview), and its templates as written.
func podsAllowedAfter(job v1beta1.TrainingJob, asRun []podbuilder.PodPreview) ([]podbuilder.PodPreview, error) {
	if !debugging(job) {
		return asRun, nil
	}
	asWritten, err := podbuilder.Preview(withRunMode(job, nil))
	// A new slice: asRun is shared with the other plugin.
	return slices.Concat(asRun, asWritten), err
}

// podsAllowedBefore are the pods a stored job was already allowed to run:
// those of podsAllowedAfter, and its templates in debug mode with the
// default command.
func podsAllowedBefore(job v1beta1.TrainingJob, asRun []podbuilder.PodPreview) ([]podbuilder.PodPreview, error) {
	allowed, err := podsAllowedAfter(job, asRun)
	if err != nil {
		return nil, err
	}
	allowed = slices.Clip(allowed)
	for _, skipInitContainers := range []bool{false, true} {
		previews, err := podbuilder.Preview(withRunMode(job, defaultDebugMode(job, skipInitContainers)))
		if err != nil {
			return nil, err
		}
		allowed = append(allowed, previews...)
	}
	return allowed, nil
}

// defaultDebugMode debugs every replica type of the job with the default
// command.
func defaultDebugMode(job v1beta1.TrainingJob, skipInitContainers bool) *v1beta1.RunMode {
	debug := &v1beta1.DebugMode{Enabled: true}
	for _, replica := range job.CommonSpec().ReplicaSpecs {
		debug.ReplicaSpecs = append(debug.ReplicaSpecs, v1beta1.ReplicaDebugSpec{
			Type:              replica.Type,
			SkipInitContainer: skipInitContainers,
			Command:           append([]string(nil), v1beta1.DefaultDebugCommand...),
		})
	}
	return &v1beta1.RunMode{Debug: debug}
}

// withRunMode returns a copy of the job in the given mode; nil runs the
// templates as written.
func withRunMode(job v1beta1.TrainingJob, mode *v1beta1.RunMode) v1beta1.TrainingJob {
	changed := job.DeepCopyObject().(v1beta1.TrainingJob)
	changed.CommonSpec().RunMode = mode
	return changed
}

func debugging(job v1beta1.TrainingJob) bool {
	return v1beta1.DebugEnabled(job.CommonSpec())
}

func containsPod(pods []podbuilder.PodPreview, preview podbuilder.PodPreview) bool {
	for _, p := range pods {
		if apiequality.Semantic.DeepEqual(p.Pod, preview.Pod) {
			return true
		}
	}
	return false
}

// jobsOf returns the job a request writes and, on an update, the job as
// stored before, both in the served version the controller works on; nil
// when the request writes no job's spec (another resource, or a
// subresource such as status). Both plugins ask; the first one's answer is
// kept with the request (requestJobs).
func jobsOf(a admission.Attributes, o admission.ObjectInterfaces) (*requestJobs, error) {
	if a.GetResource().Group != v1beta1.GroupName || a.GetSubresource() != "" {
		return nil, nil
	}
	if _, isJob := jobclient.ByResource(a.GetResource().Resource); !isJob {
		return nil, nil
	}
	store := a.GetReinvocationContext()
	if store != nil {
		if r, ok := store.Value(requestJobsKey).(*requestJobs); ok {
			return r, nil
		}
	}
	r := &requestJobs{}
	var err error
	if r.job, err = versioned(a.GetObject(), a, o); err != nil {
		return nil, err
	}
	if a.GetOperation() == admission.Update {
		if r.old, err = versioned(a.GetOldObject(), a, o); err != nil {
			return nil, err
		}
	}
	if store != nil {
		store.SetValue(requestJobsKey, r)
	}
	return r, nil
}

// versioned converts a job as admission holds it (the internal version) to
// the served version.
func versioned(obj runtime.Object, a admission.Attributes, o admission.ObjectInterfaces) (v1beta1.TrainingJob, error) {
	if obj == nil {
		return nil, fmt.Errorf("admission of %s %s/%s has no object", a.GetOperation(), a.GetNamespace(), a.GetName())
	}
	out, err := o.GetObjectCreater().New(a.GetKind())
	if err != nil {
		return nil, err
	}
	if err := o.GetObjectConvertor().Convert(obj, out, nil); err != nil {
		return nil, fmt.Errorf("converting the job to %s: %w", a.GetKind().GroupVersion(), err)
	}
	job, ok := out.(v1beta1.TrainingJob)
	if !ok {
		return nil, fmt.Errorf("%T is not a training job", out)
	}
	return job, nil
}

// previewFailure answers a write whose job's pods cannot be built. A job
// whose addresses are too large for a container to be given is the
// client's to fix (422, naming the replica specs); any other failure is
// ours.
func previewFailure(a admission.Attributes, err error) error {
	var size *podbuilder.ClusterSizeError
	if errors.As(err, &size) {
		return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(),
			field.ErrorList{field.Forbidden(field.NewPath("spec", "replicaSpecs"), size.Error())})
	}
	return apierrors.NewInternalError(err)
}
