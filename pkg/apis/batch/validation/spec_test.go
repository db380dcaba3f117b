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
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// commonCase is a change of the shared spec with the errors it must cause.
// "{w}" in an expected path stands for the worker's index, which differs
// between the kinds' test jobs, and "{w+1}" for the index after it (the
// worker is the last replica spec of both).
type commonCase struct {
	name string
	mod  specMod
	want []wantErr
}

// TestSharedSpec runs every rule of the shared spec against both kinds, so
// the kinds are known to share them.
func TestSharedSpec(t *testing.T) {
	for _, tc := range append(commonCases(), limitCases()...) {
		for _, kind := range []struct {
			name   string
			worker int
		}{
			{"TensorFlow", 2},
			{"PyTorch", 1},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				want := make([]wantErr, len(tc.want))
				for i, w := range tc.want {
					f := strings.ReplaceAll(w.Field, "{w}", strconv.Itoa(kind.worker))
					want[i] = wantErr{w.Type, strings.ReplaceAll(f, "{w+1}", strconv.Itoa(kind.worker+1))}
				}
				if kind.name == "TensorFlow" {
					expectErrors(t, ValidateTensorFlowTrainingJob(tfJob(onTF(tc.mod))), want...)
				} else {
					expectErrors(t, ValidatePyTorchTrainingJob(ptJob(onPT(tc.mod))), want...)
				}
			})
		}
	}
}

func commonCases() []commonCase {
	const (
		w    = "spec.replicaSpecs[{w}]"
		pod  = w + ".template.spec"
		ctr  = pod + ".containers[0]"
		port = ctr + ".ports"
		env  = ctr + ".env"
	)
	firstContainerName := func(s *batch.TrainingJobSpec) string { return workerPod(s).Containers[0].Name }
	withPorts := func(ports ...corev1.ContainerPort) specMod {
		return func(s *batch.TrainingJobSpec) { workerPod(s).Containers[0].Ports = ports }
	}
	withEnv := func(env ...corev1.EnvVar) specMod {
		return func(s *batch.TrainingJobSpec) { workerPod(s).Containers[0].Env = env }
	}
	withResources := func(requests, limits corev1.ResourceList) specMod {
		return func(s *batch.TrainingJobSpec) {
			workerPod(s).Containers[0].Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
		}
	}
	withMounts := func(volumes []string, mounts ...corev1.VolumeMount) specMod {
		return func(s *batch.TrainingJobSpec) {
			p := workerPod(s)
			for _, v := range volumes {
				p.Volumes = append(p.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			p.Containers[0].VolumeMounts = mounts
		}
	}
	withRunMode := func(mode batch.RunMode) specMod {
		return func(s *batch.TrainingJobSpec) { s.RunMode = &mode }
	}
	debugTypes := func(enabled bool, types ...batch.ReplicaType) *batch.DebugMode {
		d := &batch.DebugMode{Enabled: enabled}
		for _, t := range types {
			d.ReplicaSpecs = append(d.ReplicaSpecs, batch.ReplicaDebugSpec{Type: t, Command: []string{"sleep", "inf"}})
		}
		return d
	}
	resumeTypes := func(enabled bool, types ...batch.ReplicaType) *batch.PauseMode {
		p := &batch.PauseMode{Enabled: enabled}
		for _, t := range types {
			p.ResumeSpecs = append(p.ResumeSpecs, batch.ResumeSpec{Type: t, Args: []string{"--resume"}})
		}
		return p
	}
	withScheduler := func(queue string, priority int32) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.Scheduler = &batch.SchedulePolicy{T9kScheduler: &batch.T9kScheduler{Queue: queue, Priority: priority}}
		}
	}
	withTensorBoard := func(image string, filesets ...string) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.TensorboardSpec = &batch.TensorBoardSpec{Image: image, TrainingLogFilesets: filesets}
		}
	}
	const tbImage = "docker.io/tensorflow/tensorflow:2.16.1"

	return []commonCase{
		{name: "valid", mod: func(*batch.TrainingJobSpec) {}},

		// Replica specs.
		{"no replica specs", func(s *batch.TrainingJobSpec) { s.ReplicaSpecs = nil }, []wantErr{required("spec.replicaSpecs")}},
		{"type missing", func(s *batch.TrainingJobSpec) { worker(s).Type = "" }, []wantErr{required(w + ".type")}},
		{"type twice", func(s *batch.TrainingJobSpec) { s.ReplicaSpecs = append(s.ReplicaSpecs, *worker(s)) },
			[]wantErr{duplicate("spec.replicaSpecs[{w+1}].type")}},
		{"negative replicas", func(s *batch.TrainingJobSpec) { worker(s).Replicas = ptr.To[int32](-1) }, []wantErr{invalid(w + ".replicas")}},
		{"unset replicas count as one", func(s *batch.TrainingJobSpec) { worker(s).Replicas = nil }, nil},
		{"zero workers", func(s *batch.TrainingJobSpec) { worker(s).Replicas = ptr.To[int32](0) }, nil},
		{"restart policy unknown", func(s *batch.TrainingJobSpec) { worker(s).RestartPolicy = "Sometimes" },
			[]wantErr{notSupported(w + ".restartPolicy")}},
		{"restart policy ExitCode", func(s *batch.TrainingJobSpec) { worker(s).RestartPolicy = batch.RestartPolicyExitCode }, nil},
		{"restart policy OnFailure", func(s *batch.TrainingJobSpec) { worker(s).RestartPolicy = batch.RestartPolicyOnFailure }, nil},
		{"restart policy Always", func(s *batch.TrainingJobSpec) { worker(s).RestartPolicy = batch.RestartPolicyAlways }, nil},
		{"restart policy unset means Never", func(s *batch.TrainingJobSpec) { worker(s).RestartPolicy = "" }, nil},
		{"restart policy lower case", func(s *batch.TrainingJobSpec) { worker(s).RestartPolicy = "never" },
			[]wantErr{notSupported(w + ".restartPolicy")}},
		{"template restart policy is ignored", func(s *batch.TrainingJobSpec) { workerPod(s).RestartPolicy = "Always" }, nil},

		// Pod template.
		{"no containers", func(s *batch.TrainingJobSpec) { workerPod(s).Containers = nil }, []wantErr{required(pod + ".containers")}},
		{"container name missing", func(s *batch.TrainingJobSpec) { workerPod(s).Containers[0].Name = "" }, []wantErr{required(ctr + ".name")}},
		{"container name invalid", func(s *batch.TrainingJobSpec) { workerPod(s).Containers[0].Name = "Train_er" }, []wantErr{invalid(ctr + ".name")}},
		{"container names repeat", func(s *batch.TrainingJobSpec) {
			p := workerPod(s)
			p.Containers = append(p.Containers, container(p.Containers[0].Name))
		}, []wantErr{duplicate(pod + ".containers[1].name")}},
		{"init container takes a container's name", func(s *batch.TrainingJobSpec) {
			workerPod(s).InitContainers = []corev1.Container{container(firstContainerName(s))}
		}, []wantErr{duplicate(ctr + ".name")}},
		{"sidecar and init container", func(s *batch.TrainingJobSpec) {
			p := workerPod(s)
			p.InitContainers = []corev1.Container{container("fetch-data")}
			p.Containers = append(p.Containers, container("log-shipper"))
		}, nil},
		{"image missing", func(s *batch.TrainingJobSpec) { workerPod(s).Containers[0].Image = "" }, []wantErr{required(ctr + ".image")}},
		{"image with spaces", func(s *batch.TrainingJobSpec) { workerPod(s).Containers[0].Image = " train:1" }, []wantErr{invalid(ctr + ".image")}},
		{"init container image missing", func(s *batch.TrainingJobSpec) {
			c := container("fetch")
			c.Image = ""
			workerPod(s).InitContainers = []corev1.Container{c}
		}, []wantErr{required(pod + ".initContainers[0].image")}},
		{"ephemeral containers", func(s *batch.TrainingJobSpec) {
			workerPod(s).EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, []wantErr{forbidden(pod + ".ephemeralContainers")}},
		{"template labels invalid", func(s *batch.TrainingJobSpec) {
			worker(s).Template.Labels = map[string]string{"app": "not a label value"}
		}, []wantErr{invalid(w + ".template.metadata.labels")}},
		{"template annotations invalid", func(s *batch.TrainingJobSpec) {
			worker(s).Template.Annotations = map[string]string{"bad key!": "x"}
		}, []wantErr{invalid(w + ".template.metadata.annotations")}},

		// Ports.
		{"ports valid", withPorts(corev1.ContainerPort{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
			corev1.ContainerPort{ContainerPort: 9091, HostPort: 9091}), nil},
		{"port number missing", withPorts(corev1.ContainerPort{Name: "metrics"}), []wantErr{required(port + "[0].containerPort")}},
		{"port number too big", withPorts(corev1.ContainerPort{ContainerPort: 70000}), []wantErr{invalid(port + "[0].containerPort")}},
		{"port number negative", withPorts(corev1.ContainerPort{ContainerPort: -1}), []wantErr{invalid(port + "[0].containerPort")}},
		{"host port too big", withPorts(corev1.ContainerPort{ContainerPort: 80, HostPort: 65536}), []wantErr{invalid(port + "[0].hostPort")}},
		{"port name invalid", withPorts(corev1.ContainerPort{Name: "Metrics_Port", ContainerPort: 80}), []wantErr{invalid(port + "[0].name")}},
		{"port names repeat", withPorts(corev1.ContainerPort{Name: "metrics", ContainerPort: 80}, corev1.ContainerPort{Name: "metrics", ContainerPort: 81}),
			[]wantErr{duplicate(port + "[1].name")}},
		{"port protocol unknown", withPorts(corev1.ContainerPort{ContainerPort: 80, Protocol: "HTTP"}), []wantErr{notSupported(port + "[0].protocol")}},

		// Environment.
		{"env valid", withEnv(corev1.EnvVar{Name: "LR", Value: "0.1"}, corev1.EnvVar{Name: "my.env-name", Value: "x"},
			corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}), nil},
		{"env name missing", withEnv(corev1.EnvVar{Value: "x"}), []wantErr{required(env + "[0].name")}},
		{"env name with =", withEnv(corev1.EnvVar{Name: "A=B"}), []wantErr{invalid(env + "[0].name")}},
		{"env name not ASCII", withEnv(corev1.EnvVar{Name: "LÄNGE"}), []wantErr{invalid(env + "[0].name")}},
		{"env value and source", withEnv(corev1.EnvVar{Name: "A", Value: "x",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}), []wantErr{invalid(env + "[0].valueFrom")}},
		{"env source empty", withEnv(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{}}), []wantErr{required(env + "[0].valueFrom")}},
		{"env two sources", withEnv(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
			FieldRef:     &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
			SecretKeyRef: &corev1.SecretKeySelector{Key: "k"},
		}}), []wantErr{invalid(env + "[0].valueFrom")}},

		// Resources.
		{"resources valid", withResources(
			corev1.ResourceList{corev1.ResourceCPU: quantity("2"), corev1.ResourceMemory: quantity("8Gi"), "nvidia.com/gpu": quantity("1")},
			corev1.ResourceList{corev1.ResourceCPU: quantity("4"), corev1.ResourceMemory: quantity("8Gi"), "nvidia.com/gpu": quantity("1")}), nil},
		{"GPU limit only", withResources(nil, corev1.ResourceList{"nvidia.com/gpu": quantity("8")}), nil},
		{"request above limit", withResources(corev1.ResourceList{corev1.ResourceCPU: quantity("4")}, corev1.ResourceList{corev1.ResourceCPU: quantity("2")}),
			[]wantErr{invalid(ctr + ".resources.requests[cpu]")}},
		{"negative limit", withResources(nil, corev1.ResourceList{corev1.ResourceMemory: quantity("-1Gi")}),
			[]wantErr{invalid(ctr + ".resources.limits[memory]")}},
		{"negative request", withResources(corev1.ResourceList{corev1.ResourceCPU: quantity("-1")}, nil),
			[]wantErr{invalid(ctr + ".resources.requests[cpu]")}},
		{"GPU request without limit", withResources(corev1.ResourceList{"nvidia.com/gpu": quantity("1")}, nil),
			[]wantErr{forbidden(ctr + ".resources.requests[nvidia.com/gpu]")}},
		{"GPU request below limit", withResources(corev1.ResourceList{"nvidia.com/gpu": quantity("1")}, corev1.ResourceList{"nvidia.com/gpu": quantity("2")}),
			[]wantErr{invalid(ctr + ".resources.requests[nvidia.com/gpu]")}},
		{"huge pages request below limit", withResources(corev1.ResourceList{"hugepages-2Mi": quantity("2Mi")}, corev1.ResourceList{"hugepages-2Mi": quantity("4Mi")}),
			[]wantErr{invalid(ctr + ".resources.requests[hugepages-2Mi]")}},

		// Volumes and mounts.
		{"mount valid", withMounts([]string{"data"}, corev1.VolumeMount{Name: "data", MountPath: "/data"}), nil},
		{"mount of unknown volume", withMounts(nil, corev1.VolumeMount{Name: "data", MountPath: "/data"}), []wantErr{notFound(ctr + ".volumeMounts[0].name")}},
		{"mount name missing", withMounts(nil, corev1.VolumeMount{MountPath: "/data"}), []wantErr{required(ctr + ".volumeMounts[0].name")}},
		{"mount path missing", withMounts([]string{"data"}, corev1.VolumeMount{Name: "data"}), []wantErr{required(ctr + ".volumeMounts[0].mountPath")}},
		{"mount paths repeat", withMounts([]string{"data", "logs"},
			corev1.VolumeMount{Name: "data", MountPath: "/data"}, corev1.VolumeMount{Name: "logs", MountPath: "/data"}),
			[]wantErr{invalid(ctr + ".volumeMounts[1].mountPath")}},
		{"volume names repeat", withMounts([]string{"data", "data"}), []wantErr{duplicate(pod + ".volumes[1].name")}},
		{"volume name invalid", withMounts([]string{"Data"}), []wantErr{invalid(pod + ".volumes[0].name")}},
		{"volume name missing", withMounts([]string{""}), []wantErr{required(pod + ".volumes[0].name")}},

		// Run policy.
		{"run policy valid", func(s *batch.TrainingJobSpec) {
			s.RunPolicy = batch.RunPolicy{ActiveDeadlineSeconds: ptr.To[int64](3600), BackoffLimit: ptr.To[int32](0),
				CleanUpPolicy: batch.CleanUpPolicyAll, TTLSecondsAfterFinished: ptr.To[int32](0)}
		}, nil},
		{"run policy unset", func(s *batch.TrainingJobSpec) { s.RunPolicy = batch.RunPolicy{} }, nil},
		{"clean-up None", func(s *batch.TrainingJobSpec) { s.RunPolicy.CleanUpPolicy = batch.CleanUpPolicyNone }, nil},
		{"deadline zero", func(s *batch.TrainingJobSpec) { s.RunPolicy.ActiveDeadlineSeconds = ptr.To[int64](0) },
			[]wantErr{invalid("spec.runPolicy.activeDeadlineSeconds")}},
		{"deadline negative", func(s *batch.TrainingJobSpec) { s.RunPolicy.ActiveDeadlineSeconds = ptr.To[int64](-10) },
			[]wantErr{invalid("spec.runPolicy.activeDeadlineSeconds")}},
		{"backoff limit negative", func(s *batch.TrainingJobSpec) { s.RunPolicy.BackoffLimit = ptr.To[int32](-1) },
			[]wantErr{invalid("spec.runPolicy.backoffLimit")}},
		{"clean-up policy unknown", func(s *batch.TrainingJobSpec) { s.RunPolicy.CleanUpPolicy = "Sometimes" },
			[]wantErr{notSupported("spec.runPolicy.cleanUpPolicy")}},
		{"clean-up policy not canonicalized", func(s *batch.TrainingJobSpec) { s.RunPolicy.CleanUpPolicy = "all" },
			[]wantErr{notSupported("spec.runPolicy.cleanUpPolicy")}},
		{"restart strategy in place", func(s *batch.TrainingJobSpec) { s.RunPolicy.RestartStrategy = batch.RestartStrategyInPlace }, nil},
		{"restart strategy unknown", func(s *batch.TrainingJobSpec) { s.RunPolicy.RestartStrategy = "Reboot" },
			[]wantErr{notSupported("spec.runPolicy.restartStrategy")}},
		{"TTL negative", func(s *batch.TrainingJobSpec) { s.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](-1) },
			[]wantErr{invalid("spec.runPolicy.ttlSecondsAfterFinished")}},
		{"start timeout", func(s *batch.TrainingJobSpec) { s.RunPolicy.StartTimeoutSeconds = ptr.To[int64](30) }, nil},
		{"start timeout zero", func(s *batch.TrainingJobSpec) { s.RunPolicy.StartTimeoutSeconds = ptr.To[int64](0) },
			[]wantErr{invalid("spec.runPolicy.startTimeoutSeconds")}},
		{"start timeout negative", func(s *batch.TrainingJobSpec) { s.RunPolicy.StartTimeoutSeconds = ptr.To[int64](-1) },
			[]wantErr{invalid("spec.runPolicy.startTimeoutSeconds")}},
		{"startup policy InOrder", func(s *batch.TrainingJobSpec) { s.RunPolicy.StartupPolicy = batch.StartupPolicyInOrder }, nil},
		{"startup policy AnyOrder", func(s *batch.TrainingJobSpec) { s.RunPolicy.StartupPolicy = batch.StartupPolicyAnyOrder }, nil},
		{"startup policy unknown", func(s *batch.TrainingJobSpec) { s.RunPolicy.StartupPolicy = "MasterFirst" },
			[]wantErr{notSupported("spec.runPolicy.startupPolicy")}},

		// Run mode.
		{"debug mode", withRunMode(batch.RunMode{Debug: debugTypes(true, batch.ReplicaTypeWorker)}), nil},
		{"debug mode without replica specs", withRunMode(batch.RunMode{Debug: debugTypes(true)}), nil},
		{"debug of an unknown type", withRunMode(batch.RunMode{Debug: debugTypes(true, "launcher")}),
			[]wantErr{notSupported("spec.runMode.debug.replicaSpecs[0].type")}},
		{"debug of an unknown type while disabled", withRunMode(batch.RunMode{Debug: debugTypes(false, "launcher")}),
			[]wantErr{notSupported("spec.runMode.debug.replicaSpecs[0].type")}},
		{"debug type missing", withRunMode(batch.RunMode{Debug: debugTypes(true, "")}),
			[]wantErr{required("spec.runMode.debug.replicaSpecs[0].type")}},
		{"debug type twice", withRunMode(batch.RunMode{Debug: debugTypes(true, batch.ReplicaTypeWorker, batch.ReplicaTypeWorker)}),
			[]wantErr{duplicate("spec.runMode.debug.replicaSpecs[1].type")}},
		{"paused with resume specs", withRunMode(batch.RunMode{Pause: resumeTypes(true, batch.ReplicaTypeWorker)}), nil},
		{"resume of an unknown type", withRunMode(batch.RunMode{Pause: resumeTypes(true, "launcher")}),
			[]wantErr{notSupported("spec.runMode.pause.resumeSpecs[0].type")}},
		{"resume type missing", withRunMode(batch.RunMode{Pause: resumeTypes(false, "")}),
			[]wantErr{required("spec.runMode.pause.resumeSpecs[0].type")}},
		{"resume type twice", withRunMode(batch.RunMode{Pause: resumeTypes(true, batch.ReplicaTypeWorker, batch.ReplicaTypeWorker)}),
			[]wantErr{duplicate("spec.runMode.pause.resumeSpecs[1].type")}},
		{"paused and debugged", withRunMode(batch.RunMode{Debug: debugTypes(true), Pause: resumeTypes(true)}),
			[]wantErr{forbidden("spec.runMode.pause.enabled")}},
		{"debug settings kept while paused", withRunMode(batch.RunMode{Debug: debugTypes(false, batch.ReplicaTypeWorker), Pause: resumeTypes(true)}), nil},
		{"empty run mode", withRunMode(batch.RunMode{}), nil},

		// Scheduler.
		{"scheduler valid", withScheduler("team-a", 100), nil},
		{"scheduler without T9k", func(s *batch.TrainingJobSpec) { s.Scheduler = &batch.SchedulePolicy{} }, nil},
		{"queue missing", withScheduler("", 0), []wantErr{required("spec.scheduler.t9kScheduler.queue")}},
		{"queue invalid", withScheduler("Team A", 0), []wantErr{invalid("spec.scheduler.t9kScheduler.queue")}},
		{"priority too high", withScheduler("default", 101), []wantErr{invalid("spec.scheduler.t9kScheduler.priority")}},
		{"priority negative", withScheduler("default", -1), []wantErr{invalid("spec.scheduler.t9kScheduler.priority")}},

		// TensorBoard.
		{"tensorboard valid", withTensorBoard(tbImage, "t9k://pvc/mnist-logs/train", "t9k://pvc/mnist-logs/eval/"), nil},
		{"tensorboard image missing", withTensorBoard("", "t9k://pvc/logs/train"), []wantErr{required("spec.tensorboardSpec.image")}},
		{"tensorboard without logs", withTensorBoard(tbImage), []wantErr{required("spec.tensorboardSpec.trainingLogFilesets")}},
		{"log location of another scheme", withTensorBoard(tbImage, "pvc://logs/train"), []wantErr{invalid("spec.tensorboardSpec.trainingLogFilesets[0]")}},
		{"log location without PVC name", withTensorBoard(tbImage, "t9k://pvc//train"), []wantErr{invalid("spec.tensorboardSpec.trainingLogFilesets[0]")}},
		{"log location with invalid PVC name", withTensorBoard(tbImage, "t9k://pvc/Logs_PVC/train"),
			[]wantErr{invalid("spec.tensorboardSpec.trainingLogFilesets[0]")}},
		{"log location without path", withTensorBoard(tbImage, "t9k://pvc/logs"), []wantErr{invalid("spec.tensorboardSpec.trainingLogFilesets[0]")}},
		{"log location with empty path", withTensorBoard(tbImage, "t9k://pvc/logs/"), []wantErr{invalid("spec.tensorboardSpec.trainingLogFilesets[0]")}},
		{"log location leaving the PVC", withTensorBoard(tbImage, "t9k://pvc/logs/train/../../etc"),
			[]wantErr{invalid("spec.tensorboardSpec.trainingLogFilesets[0]")}},
		{"log location with dots in names", withTensorBoard(tbImage, "t9k://pvc/logs.v2/run..1/./x"), nil},
		{"log location twice", withTensorBoard(tbImage, "t9k://pvc/logs/a", "t9k://pvc/logs/a"),
			[]wantErr{duplicate("spec.tensorboardSpec.trainingLogFilesets[1]")}},
		{"tensorboard resources", func(s *batch.TrainingJobSpec) {
			withTensorBoard(tbImage, "t9k://pvc/logs/a")(s)
			s.TensorboardSpec.Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: quantity("2Gi"), corev1.ResourceCPU: quantity("-1")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: quantity("1Gi")},
			}
		}, []wantErr{invalid("spec.tensorboardSpec.resources.requests[memory]"), invalid("spec.tensorboardSpec.resources.requests[cpu]")}},
	}
}
