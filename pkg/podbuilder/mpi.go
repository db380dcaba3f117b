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
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// MPIKind is the kind of MPIJob.
const MPIKind = batch.MPIJobKind

// The SSH key pair of an MPI job: a Secret the controller makes, one per
// job. An init container copies it into an emptyDir at the job's
// sshAuthMountPath, with the modes sshd's StrictModes asks for (a Secret's
// volume is group and world writable, which sshd refuses).
const (
	SSHPrivateKey     = "id_rsa"
	SSHPublicKey      = "id_rsa.pub"
	SSHAuthorizedKeys = "authorized_keys"
	sshSecretVolume   = "tensorstack-ssh-secret"
	sshSecretDir      = "/etc/tensorstack/ssh-secret"
	sshVolumeName     = "tensorstack-ssh"
)

// SSHSecretName is the name of an MPI job's key pair Secret: the job's name
// and UID. The controller may create Secrets but not read them, so it cannot
// check who owns one it finds; a name bound to this one job cannot be taken
// before the job exists, nor by the Secret of a job deleted earlier under
// the same name (which the garbage collector deletes), nor by the
// `<job>-ssh` Secret of Kubeflow's mpi-operator beside it.
func SSHSecretName(job metav1.Object) string {
	if job.GetUID() == "" {
		// A preview of a job not yet created.
		return legacySSHSecretName(job.GetName()) + "-<uid>"
	}
	return legacySSHSecretName(job.GetName()) + "-" + string(job.GetUID())
}

// legacySSHSecretName is the name controllers before 2026-12 gave a job's
// Secret; a job that still runs keeps it (SSHSecretOf).
func legacySSHSecretName(job string) string { return job + "-ssh" }

// SSHSecretOf is the key pair Secret an MPI job's pod mounts when it is the
// name an earlier controller gave the job's Secret, "" otherwise: such a
// job's new pods must mount the same keys as the pods that run.
func SSHSecretOf(job string, pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == sshSecretVolume && v.Secret != nil && v.Secret.SecretName == legacySSHSecretName(job) {
			return v.Secret.SecretName
		}
	}
	return ""
}

// The launcher's hostfile, published in the job's cluster ConfigMap and
// mounted from it.
const (
	MPIHostfileDir       = "/etc/mpi"
	mpiHostfileKey       = "hostfile"
	MPIHostfile          = MPIHostfileDir + "/" + mpiHostfileKey
	hostfileVolumeName   = "tensorstack-mpi-hostfile"
	sshConnectionOptions = "-o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
)

// MPISetupInitName is the init container that puts the keys in place.
const MPISetupInitName = "tensorstack-mpi-setup"

// mpiSetupScript copies the keys from the Secret's volume ($1) into the
// key directory ($2) with sshd's modes.
const mpiSetupScript = `set -e
cp -L "$1"/* "$2"/
chmod 700 "$2"
chmod 600 "$2"/*`

// mpiAdapter runs an MPI program: mpirun on the launcher starts the ranks
// on the workers over SSH.
type mpiAdapter struct{}

// MPI is the adapter of MPIJob.
var MPI Adapter = mpiAdapter{}

var _ ClusterPublisher = mpiAdapter{}

func (mpiAdapter) Kind() string     { return MPIKind }
func (mpiAdapter) Resource() string { return v1beta1.MPIJobResource }

// TrainingContainerName is empty: each replica's first container.
func (mpiAdapter) TrainingContainerName() string { return "" }

// PortNames and DefaultPort: none. mpirun reaches the workers over SSH
// (port 22) and the ranks pick their own ports.
func (mpiAdapter) PortNames() []string { return nil }
func (mpiAdapter) DefaultPort() int32  { return 0 }

// RankOrder keeps the list order.
func (mpiAdapter) RankOrder(specs []v1beta1.ReplicaSpec) []v1beta1.ReplicaSpec { return specs }

// mpiSpec is the MPI job's own settings, with the defaults where a job
// (built without the API server) lacks them.
func mpiSpec(t *Topology) (slots int32, impl v1beta1.MPIImplementation, keys string) {
	slots, impl, keys = batch.DefaultSlotsPerWorker, v1beta1.MPIImplementationOpenMPI, batch.DefaultSSHAuthMountPath
	if job, ok := t.Job.(*v1beta1.MPIJob); ok {
		slots = ptr.Deref(job.Spec.SlotsPerWorker, slots)
		if job.Spec.MPIImplementation != "" {
			impl = job.Spec.MPIImplementation
		}
		if job.Spec.SSHAuthMountPath != "" {
			keys = job.Spec.SSHAuthMountPath
		}
	}
	return slots, impl, keys
}

// ClusterValues publishes the launcher's hostfile.
func (mpiAdapter) ClusterValues(t *Topology) (ClusterData, error) {
	return ClusterData{Files: map[string]string{mpiHostfileKey: Hostfile(t)}}, nil
}

// Hostfile is the launcher's hostfile: one line per worker, its DNS name
// and its slots, in the implementation's form.
func Hostfile(t *Topology) string {
	slots, impl, _ := mpiSpec(t)
	var b strings.Builder
	if g := t.Group(v1beta1.ReplicaTypeWorker); g != nil {
		for i := range g.Replicas {
			host := t.Address(ReplicaID{Type: g.Type, Index: i})
			if impl == v1beta1.MPIImplementationOpenMPI {
				fmt.Fprintf(&b, "%s slots=%d\n", host, slots)
			} else {
				fmt.Fprintf(&b, "%s:%d\n", host, slots)
			}
		}
	}
	return b.String()
}

// Env points the launcher's mpirun at the hostfile, and its ssh at the
// workers without asking about their host keys, in the variables of the
// job's MPI implementation. The workers need nothing: mpirun tells the
// ranks it starts there.
func (mpiAdapter) Env(t *Topology) (ReplicaEnv, error) {
	if err := t.LimitError(); err != nil {
		return nil, err
	}
	_, impl, _ := mpiSpec(t)
	var launcher []corev1.EnvVar
	switch impl {
	case v1beta1.MPIImplementationIntelMPI:
		launcher = []corev1.EnvVar{envVar(batch.EnvIntelMPIHostfile, MPIHostfile),
			envVar(batch.EnvIntelMPIBootstrapArgs, sshConnectionOptions)}
	case v1beta1.MPIImplementationMPICH:
		launcher = []corev1.EnvVar{envVar(batch.EnvMPICHHostfile, MPIHostfile),
			envVar(batch.EnvMPICHLaunchExtraArgs, sshConnectionOptions)}
	default:
		launcher = []corev1.EnvVar{envVar(batch.EnvOpenMPIHostfile, MPIHostfile),
			envVar(batch.EnvOpenMPIRshArgs, sshConnectionOptions), envVar(batch.EnvOpenMPIKeepFQDN, "true"),
			envVar(batch.EnvPRRTEHostfile, MPIHostfile),
			envVar(batch.EnvPRRTESSHArgs, sshConnectionOptions), envVar(batch.EnvPRRTEKeepFQDN, "true")}
	}
	return func(r ReplicaID) ([]corev1.EnvVar, error) {
		if r.Type == v1beta1.ReplicaTypeLauncher {
			return launcher, nil
		}
		return nil, nil
	}, nil
}

func (mpiAdapter) Entrypoint(*Topology, ReplicaID, *corev1.Container) {}

// DecoratePod gives the training container of every replica the job's key
// pair, put in place by an init container that runs the training
// container's image, and the launcher its hostfile, from the job's cluster
// ConfigMap.
func (mpiAdapter) DecoratePod(t *Topology, r ReplicaID, pod *corev1.Pod, training int) {
	_, _, keys := mpiSpec(t)
	c := &pod.Spec.Containers[training]
	keysMount := corev1.VolumeMount{Name: sshVolumeName, MountPath: keys}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: sshSecretVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  t.SSHSecret,
			DefaultMode: ptr.To(int32(0o400)),
		}}},
		corev1.Volume{Name: sshVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c.VolumeMounts = append(c.VolumeMounts, keysMount)
	setup := corev1.Container{
		Name:            MPISetupInitName,
		Image:           c.Image,
		ImagePullPolicy: c.ImagePullPolicy,
		Command:         []string{"sh", "-c", mpiSetupScript, MPISetupInitName, sshSecretDir, keys},
		Resources:       computeResources(c.Resources),
		SecurityContext: c.SecurityContext.DeepCopy(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: sshSecretVolume, MountPath: sshSecretDir, ReadOnly: true},
			keysMount,
		},
	}
	if r.Type == v1beta1.ReplicaTypeLauncher {
		if _, impl, _ := mpiSpec(t); impl == v1beta1.MPIImplementationOpenMPI {
			mpiExports(c)
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, t.clusterVolume(hostfileVolumeName, mpiHostfileKey))
		c.VolumeMounts = append(c.VolumeMounts,
			corev1.VolumeMount{Name: hostfileVolumeName, MountPath: MPIHostfileDir, ReadOnly: true})
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, setup)
}

// mpiExports gives an Open MPI launcher TENSORSTACK_MPI_EXPORTS, the -x
// options that make mpirun pass the launcher's job and checkpoint
// variables, and the API's address, to every rank it starts:
// mpirun $TENSORSTACK_MPI_EXPORTS python3 train.py.
func mpiExports(c *corev1.Container) {
	options := []string{"-x", "KUBERNETES_SERVICE_HOST", "-x", "KUBERNETES_SERVICE_PORT"}
	for _, v := range c.Env {
		if strings.HasPrefix(v.Name, batch.GenericEnvPrefix) {
			options = append(options, "-x", v.Name)
		}
	}
	setEnv(c, []corev1.EnvVar{envVar(batch.EnvMPIExports, strings.Join(options, " "))})
}

// GangMember: every replica; mpirun needs every worker.
func (mpiAdapter) GangMember(v1beta1.ReplicaType) bool { return true }

// Leaders: the workers, which the launcher waits for under the InOrder
// startup policy (the kind's default): mpirun reaches every one of them as
// it starts.
func (mpiAdapter) Leaders(t *Topology) []ReplicaID {
	var out []ReplicaID
	if g := t.Group(v1beta1.ReplicaTypeWorker); g != nil {
		for i := range g.Replicas {
			out = append(out, ReplicaID{Type: g.Type, Index: i})
		}
	}
	return out
}

// Decider: the launcher.
func (mpiAdapter) Decider(t *Topology) (ReplicaID, bool) {
	if g := t.Group(v1beta1.ReplicaTypeLauncher); g != nil && g.Replicas > 0 {
		return ReplicaID{Type: v1beta1.ReplicaTypeLauncher}, true
	}
	return t.firstReplica()
}

// Succeeded: when the launcher succeeded, mpirun having seen every rank
// end. The workers' SSH servers never end by themselves.
func (mpiAdapter) Succeeded(t *Topology, phases ReplicaPhases) bool {
	if g := t.Group(v1beta1.ReplicaTypeLauncher); g != nil && g.Replicas > 0 {
		return phases.Succeeded(ReplicaID{Type: v1beta1.ReplicaTypeLauncher})
	}
	return false
}

// NeedsSSHKeys says whether the kind's pods mount the job's key pair
// Secret, which the controller then makes before the pods.
func NeedsSSHKeys(a Adapter) bool { return a == MPI }
