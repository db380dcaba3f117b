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

package framework

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Annotations read by the simulated nodes (hack/local/kwok-stages): a running
// pod with AnnotationExitCode terminates RunDuration after it started, with
// that code; AnnotationExitCode+"."+container overrides it per container.
const (
	AnnotationExitCode    = "kwok.tensorstack.dev/exit-code"
	AnnotationRunDuration = "kwok.tensorstack.dev/run-duration"
)

// Image of the containers the builders create; the simulated nodes never
// pull it.
const Image = "docker.io/library/busybox:1.36"

// JobBuilder builds a TensorFlowTrainingJob or a PyTorchTrainingJob:
//
//	NewTFJob("mnist").WithReplicas("worker", 2).ExitCode(0).RunFor("2s")
//
// Replica templates get one training container (named tensorflow or
// pytorch). Without any exit code a replica's pods run until deleted. For
// real containers, the setters of builder_template.go give it an image, a
// command and the rest:
//
//	NewPyTorchJob("ddp").WithReplicas("node", 2).Image(TrainingImage).
//		Command("python3", "pytorch_ddp.py").Requests("250m", "512Mi")
type JobBuilder struct {
	kind    Kind
	name    string
	labels  map[string]string
	specs   []v1beta1.ReplicaSpec
	policy  v1beta1.RunPolicy
	mode    *v1beta1.RunMode
	tb      *v1beta1.TensorBoardSpec
	torch   *v1beta1.TorchrunConfig
	elastic *v1beta1.ElasticConfig
	exit    *int32
	runFor  string
	perType map[string]*replicaOptions
	sched   *v1beta1.SchedulePolicy
	pool    *NodePool
	gpus    int64
	// selector is added to every replica's node selector.
	selector map[string]string
	// annotations are the job's.
	annotations map[string]string
	// managedBy is spec.managedBy.
	managedBy *string
	// successRules and failureRules are a generic job's.
	successRules, failureRules []v1beta1.ReplicaRule
	// mpiSlots is an MPI job's slotsPerWorker.
	mpiSlots *int32
	// checkpointDir, when set, is where every replica mounts an emptyDir
	// named by the job's checkpoint policy.
	checkpointDir string
	// edits change every replica's pod template (builder_template.go).
	edits []templateEdit
}

type replicaOptions struct {
	exit    *int32
	forever bool
	runFor  string
	// edits change this replica type's pod template, after the job's.
	edits []templateEdit
}

// NewTFJob starts a TensorFlowTrainingJob named name.
func NewTFJob(name string) *JobBuilder { return newBuilder(KindTF, name) }

// NewPyTorchJob starts a PyTorchTrainingJob named name.
func NewPyTorchJob(name string) *JobBuilder { return newBuilder(KindPyTorch, name) }

// NewXGBoostJob starts an XGBoostTrainingJob.
func NewXGBoostJob(name string) *JobBuilder { return newBuilder(KindXGBoost, name) }

// NewGenericJob starts a GenericJob.
func NewGenericJob(name string) *JobBuilder { return newBuilder(KindGeneric, name) }

// NewMPIJob starts an MPIJob.
func NewMPIJob(name string) *JobBuilder { return newBuilder(KindMPI, name) }

// SlotsPerWorker sets an MPI job's slots per worker.
func (b *JobBuilder) SlotsPerWorker(n int32) *JobBuilder {
	b.mpiSlots = ptr.To(n)
	return b
}

// SucceedsWhen sets a generic job's success rules.
func (b *JobBuilder) SucceedsWhen(rules ...v1beta1.ReplicaRule) *JobBuilder {
	b.successRules = rules
	return b
}

// FailsWhen sets a generic job's failure rules.
func (b *JobBuilder) FailsWhen(rules ...v1beta1.ReplicaRule) *JobBuilder {
	b.failureRules = rules
	return b
}

func newBuilder(k Kind, name string) *JobBuilder {
	return &JobBuilder{kind: k, name: name, perType: map[string]*replicaOptions{}}
}

func (b *JobBuilder) opts(typ string) *replicaOptions {
	o := b.perType[typ]
	if o == nil {
		o = &replicaOptions{}
		b.perType[typ] = o
	}
	return o
}

func (b *JobBuilder) spec(typ string) *v1beta1.ReplicaSpec {
	for i := range b.specs {
		if string(b.specs[i].Type) == typ {
			return &b.specs[i]
		}
	}
	panic("framework: no replica type " + typ + " in job " + b.name)
}

// WithReplicas adds a replica type with n replicas, in list order.
func (b *JobBuilder) WithReplicas(typ string, n int32) *JobBuilder {
	container := corev1.Container{
		Name:    b.kind.ContainerName(),
		Image:   Image,
		Command: []string{"python", "/workspace/train.py"},
		Args:    []string{"--type=" + typ},
	}
	b.specs = append(b.specs, v1beta1.ReplicaSpec{
		Type:     v1beta1.ReplicaType(typ),
		Replicas: ptr.To(n),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
	})
	return b
}

// WithRestartPolicy sets a replica type's restart policy.
func (b *JobBuilder) WithRestartPolicy(typ string, p v1beta1.RestartPolicy) *JobBuilder {
	b.spec(typ).RestartPolicy = p
	return b
}

// WithPort gives a replica type's training container a named port.
func (b *JobBuilder) WithPort(typ, name string, port int32) *JobBuilder {
	s := b.spec(typ)
	c := &s.Template.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port})
	return b
}

// ExitCode makes every replica's pods exit with code (after RunFor).
func (b *JobBuilder) ExitCode(code int32) *JobBuilder {
	b.exit = ptr.To(code)
	return b
}

// RunFor sets how long every replica's pods run before they exit (a Go
// duration; the simulated nodes default to 1s).
func (b *JobBuilder) RunFor(d string) *JobBuilder {
	b.runFor = d
	return b
}

// ReplicaExitCode makes one replica type's pods exit with code.
func (b *JobBuilder) ReplicaExitCode(typ string, code int32) *JobBuilder {
	o := b.opts(typ)
	o.exit, o.forever = ptr.To(code), false
	return b
}

// ReplicaRunFor sets how long one replica type's pods run.
func (b *JobBuilder) ReplicaRunFor(typ, d string) *JobBuilder {
	b.opts(typ).runFor = d
	return b
}

// Forever makes one replica type's pods run until deleted, whatever ExitCode
// says.
func (b *JobBuilder) Forever(typ string) *JobBuilder {
	o := b.opts(typ)
	o.exit, o.forever = nil, true
	return b
}

// BackoffLimit sets spec.runPolicy.backoffLimit.
func (b *JobBuilder) BackoffLimit(n int32) *JobBuilder {
	b.policy.BackoffLimit = ptr.To(n)
	return b
}

// NodeFailureExitCodes sets spec.runPolicy.nodeFailureExitCodes: a
// replica exiting with one of them makes its node suspect.
func (b *JobBuilder) NodeFailureExitCodes(codes ...int32) *JobBuilder {
	b.policy.NodeFailureExitCodes = codes
	return b
}

// ActiveDeadline sets spec.runPolicy.activeDeadlineSeconds.
func (b *JobBuilder) ActiveDeadline(seconds int64) *JobBuilder {
	b.policy.ActiveDeadlineSeconds = ptr.To(seconds)
	return b
}

// StartTimeout sets spec.runPolicy.startTimeoutSeconds.
func (b *JobBuilder) StartTimeout(seconds int64) *JobBuilder {
	b.policy.StartTimeoutSeconds = ptr.To(seconds)
	return b
}

// CleanUp sets spec.runPolicy.cleanUpPolicy.
func (b *JobBuilder) CleanUp(p v1beta1.CleanUpPolicy) *JobBuilder {
	b.policy.CleanUpPolicy = p
	return b
}

// TTL sets spec.runPolicy.ttlSecondsAfterFinished.
func (b *JobBuilder) TTL(seconds int32) *JobBuilder {
	b.policy.TTLSecondsAfterFinished = ptr.To(seconds)
	return b
}

// Paused creates the job paused.
func (b *JobBuilder) Paused() *JobBuilder {
	if b.mode == nil {
		b.mode = &v1beta1.RunMode{}
	}
	b.mode.Pause = &v1beta1.PauseMode{Enabled: true}
	return b
}

// Debug creates the job in debug mode with the given per-type settings.
func (b *JobBuilder) Debug(specs ...v1beta1.ReplicaDebugSpec) *JobBuilder {
	if b.mode == nil {
		b.mode = &v1beta1.RunMode{}
	}
	b.mode.Debug = &v1beta1.DebugMode{Enabled: true, ReplicaSpecs: specs}
	return b
}

// TensorBoard asks for a TensorBoard showing the given filesets.
func (b *JobBuilder) TensorBoard(image string, filesets ...string) *JobBuilder {
	b.tb = &v1beta1.TensorBoardSpec{Image: image, TrainingLogFilesets: filesets}
	return b
}

// Torchrun enables torchrun (PyTorch only).
func (b *JobBuilder) Torchrun(tc v1beta1.TorchrunConfig) *JobBuilder {
	tc.Enabled = true
	b.torch = &tc
	return b
}

// Elastic makes the job elastic (PyTorch or GenericJob): it runs expected replicas
// in all, between minR and maxR.
func (b *JobBuilder) Elastic(minR, maxR, expected int32) *JobBuilder {
	b.elastic = &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To(minR), MaxReplicas: ptr.To(maxR), ExpectedReplicas: ptr.To(expected)}
	return b
}

// Label sets a label on the job.
func (b *JobBuilder) Label(k, v string) *JobBuilder {
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	b.labels[k] = v
	return b
}

// Gang asks for the job to be gang-scheduled in queue (spec.scheduler.t9kScheduler).
func (b *JobBuilder) Gang(queue string, priority int32) *JobBuilder {
	b.sched = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: queue, Priority: priority}}
	return b
}

// GPUs makes every replica's training container ask for n nvidia.com/gpu.
func (b *JobBuilder) GPUs(n int64) *JobBuilder {
	b.gpus = n
	return b
}

// OnPool places every replica on the nodes of pool only.
func (b *JobBuilder) OnPool(pool *NodePool) *JobBuilder {
	b.pool = pool
	return b
}

// Annotate sets an annotation on the job.
func (b *JobBuilder) Annotate(key, value string) *JobBuilder {
	if b.annotations == nil {
		b.annotations = map[string]string{}
	}
	b.annotations[key] = value
	return b
}

// ManagedBy sets spec.managedBy.
func (b *JobBuilder) ManagedBy(controller string) *JobBuilder {
	b.managedBy = &controller
	return b
}

// NodeSelector adds a node label that every replica's pods require.
func (b *JobBuilder) NodeSelector(key, value string) *JobBuilder {
	if b.selector == nil {
		b.selector = map[string]string{}
	}
	b.selector[key] = value
	return b
}

// Checkpoints gives every replica an emptyDir volume named checkpoints,
// mounted at dir, and a checkpoint policy naming it.
func (b *JobBuilder) Checkpoints(dir string) *JobBuilder {
	b.checkpointDir = dir
	b.policy.Checkpoint = &v1beta1.CheckpointPolicy{VolumeName: "checkpoints"}
	return b
}

// Kind is the kind the builder builds.
func (b *JobBuilder) Kind() Kind { return b.kind }

// Name is the job's name.
func (b *JobBuilder) Name() string { return b.name }

func (b *JobBuilder) common() v1beta1.TrainingJobSpec {
	spec := v1beta1.TrainingJobSpec{RunPolicy: b.policy, RunMode: b.mode, TensorboardSpec: b.tb, Scheduler: b.sched,
		ManagedBy: b.managedBy}
	for _, s := range b.specs {
		s = *s.DeepCopy()
		if b.gpus > 0 {
			gpus := corev1.ResourceList{ResourceGPU: *resource.NewQuantity(b.gpus, resource.DecimalSI)}
			s.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: gpus, Limits: gpus}
		}
		if b.pool != nil {
			s.Template.Spec.NodeSelector = b.pool.Selector()
			s.Template.Spec.Tolerations = []corev1.Toleration{b.pool.Toleration()}
		}
		for k, v := range b.selector {
			if s.Template.Spec.NodeSelector == nil {
				s.Template.Spec.NodeSelector = map[string]string{}
			}
			s.Template.Spec.NodeSelector[k] = v
		}
		o := b.perType[string(s.Type)]
		if o == nil {
			o = &replicaOptions{}
		}
		exit, runFor := b.exit, b.runFor
		if o.exit != nil {
			exit = o.exit
		}
		if o.forever {
			exit = nil
		}
		if o.runFor != "" {
			runFor = o.runFor
		}
		if exit != nil {
			ann := map[string]string{AnnotationExitCode: strconv.Itoa(int(*exit))}
			if runFor != "" {
				ann[AnnotationRunDuration] = runFor
			}
			s.Template.Annotations = ann
		}
		if b.checkpointDir != "" {
			s.Template.Spec.Volumes = append(s.Template.Spec.Volumes, corev1.Volume{Name: "checkpoints",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c := &s.Template.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "checkpoints", MountPath: b.checkpointDir})
		}
		for _, edit := range b.edits {
			edit(&s.Template)
		}
		for _, edit := range o.edits {
			edit(&s.Template)
		}
		spec.ReplicaSpecs = append(spec.ReplicaSpecs, s)
	}
	return spec
}

func (b *JobBuilder) meta(namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: b.name, Namespace: namespace, Labels: b.labels, Annotations: b.annotations}
}

// Build returns the job object in namespace.
func (b *JobBuilder) Build(namespace string) v1beta1.TrainingJob {
	switch b.kind {
	case KindPyTorch:
		return &v1beta1.PyTorchTrainingJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: string(KindPyTorch)},
			ObjectMeta: b.meta(namespace),
			Spec:       v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: b.common(), TorchrunConfig: b.torch, Elastic: b.elastic},
		}
	case KindXGBoost:
		return &v1beta1.XGBoostTrainingJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: string(KindXGBoost)},
			ObjectMeta: b.meta(namespace),
			Spec:       v1beta1.XGBoostTrainingJobSpec{TrainingJobSpec: b.common()},
		}
	case KindMPI:
		return &v1beta1.MPIJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: string(KindMPI)},
			ObjectMeta: b.meta(namespace),
			Spec:       v1beta1.MPIJobSpec{TrainingJobSpec: b.common(), SlotsPerWorker: b.mpiSlots},
		}
	case KindGeneric:
		return &v1beta1.GenericJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: string(KindGeneric)},
			ObjectMeta: b.meta(namespace),
			Spec: v1beta1.GenericJobSpec{TrainingJobSpec: b.common(), SuccessRules: b.successRules, FailureRules: b.failureRules,
				Elastic: b.elastic},
		}
	default:
		return &v1beta1.TensorFlowTrainingJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: string(KindTF)},
			ObjectMeta: b.meta(namespace),
			Spec:       v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: b.common()},
		}
	}
}

// Manifest renders the built job as YAML for kubectl, without the status
// and the empty creationTimestamp a typed object always carries.
func (b *JobBuilder) Manifest(namespace string) string {
	data, err := json.Marshal(b.Build(namespace))
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		panic(err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(out)
}
