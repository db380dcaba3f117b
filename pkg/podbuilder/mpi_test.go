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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// mpiJob is an MPI job of a launcher and two workers, of the given MPI.
func mpiJob(impl v1beta1.MPIImplementation) *v1beta1.MPIJob {
	job := &v1beta1.MPIJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
	for _, r := range []struct {
		typ      v1beta1.ReplicaType
		replicas int32
	}{{v1beta1.ReplicaTypeLauncher, 1}, {v1beta1.ReplicaTypeWorker, 2}} {
		job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type: r.typ, Replicas: ptr.To(r.replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "mpi:1", Command: []string{"mpirun", "python3", "train.py"},
			}}}},
		})
	}
	job.Spec.SlotsPerWorker = ptr.To(int32(4))
	job.Spec.MPIImplementation = impl
	job.Spec.SSHAuthMountPath = "/home/mpi/.ssh"
	job.Spec.RunPolicy.StartupPolicy = v1beta1.StartupPolicyInOrder
	return job
}

func TestMPIHostfileAndEnv(t *testing.T) {
	for _, tc := range []struct {
		impl     v1beta1.MPIImplementation
		hostfile string
		env      map[string]string
	}{
		{v1beta1.MPIImplementationOpenMPI, "worker-0.j.ns.svc slots=4\nworker-1.j.ns.svc slots=4\n", map[string]string{
			"OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
			"OMPI_MCA_plm_rsh_args": sshConnectionOptions,
			// Open MPI 5's PRRTE reads its own names only.
			"PRTE_MCA_prte_default_hostfile": "/etc/mpi/hostfile", "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
			"PRTE_MCA_plm_ssh_args": sshConnectionOptions}},
		{v1beta1.MPIImplementationIntelMPI, "worker-0.j.ns.svc:4\nworker-1.j.ns.svc:4\n", map[string]string{
			"I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile", "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": sshConnectionOptions}},
		{v1beta1.MPIImplementationMPICH, "worker-0.j.ns.svc:4\nworker-1.j.ns.svc:4\n", map[string]string{
			"HYDRA_HOST_FILE": "/etc/mpi/hostfile", "HYDRA_LAUNCH_EXTRA_ARGS": sshConnectionOptions}},
	} {
		job := mpiJob(tc.impl)
		b := &Builder{Adapter: MPI, Job: job, Topology: NewTopology(MPI, job, "")}
		if got := Hostfile(b.Topology); got != tc.hostfile {
			t.Errorf("%s: hostfile %q, want %q", tc.impl, got, tc.hostfile)
		}
		launcher, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeLauncher})
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, v := range launcher.Spec.Containers[0].Env {
			env[v.Name] = v.Value
		}
		for name, value := range tc.env {
			if env[name] != value {
				t.Errorf("%s: launcher's %s=%q, want %q", tc.impl, name, env[name], value)
			}
		}
		// The launcher waits for the workers and puts its keys in place;
		// its hostfile is the job's, from the cluster config map.
		var inits []string
		for _, c := range launcher.Spec.InitContainers {
			inits = append(inits, c.Name)
		}
		if len(inits) != 2 || inits[0] != StartupGateContainerName || inits[1] != MPISetupInitName {
			t.Errorf("%s: launcher's init containers %v, want the startup gate then the MPI setup", tc.impl, inits)
		}
		cm, err := b.ClusterConfigMap()
		if err != nil {
			t.Fatal(err)
		}
		if got := cm.Data["hostfile"]; got != tc.hostfile {
			t.Errorf("%s: the hostfile published is %q, want %q", tc.impl, got, tc.hostfile)
		}
		for _, v := range launcher.Spec.Volumes {
			if v.Name == hostfileVolumeName && (v.ConfigMap == nil || v.ConfigMap.Name != cm.Name ||
				len(v.ConfigMap.Items) != 1 || v.ConfigMap.Items[0].Path != "hostfile") {
				t.Errorf("%s: the hostfile's volume %+v, want the key hostfile of config map %s", tc.impl, v.VolumeSource, cm.Name)
			}
		}
		mounts := map[string]string{}
		for _, m := range launcher.Spec.Containers[0].VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		if mounts[sshVolumeName] != "/home/mpi/.ssh" || mounts[hostfileVolumeName] != MPIHostfileDir {
			t.Errorf("%s: launcher's mounts %v, want the keys at /home/mpi/.ssh and the hostfile at %s", tc.impl, mounts, MPIHostfileDir)
		}

		worker, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker, Index: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(worker.Spec.InitContainers); n != 1 || worker.Spec.InitContainers[0].Name != MPISetupInitName ||
			len(worker.Spec.InitContainers[0].Command) != 6 {
			t.Errorf("%s: a worker's init containers %+v, want the MPI setup alone", tc.impl,
				worker.Spec.InitContainers)
		}
		var secret string
		for _, v := range worker.Spec.Volumes {
			if v.Secret != nil {
				secret = v.Secret.SecretName
			}
		}
		if secret != "j-ssh-uid-j" || worker.Spec.Containers[0].VolumeMounts[0].MountPath != "/home/mpi/.ssh" {
			t.Errorf("%s: worker's keys from secret %q at %v, want j-ssh-uid-j copied to /home/mpi/.ssh", tc.impl, secret, worker.Spec.Containers[0].VolumeMounts)
		}
	}
}

func TestMPISuccessAndLeaders(t *testing.T) {
	job := mpiJob(v1beta1.MPIImplementationOpenMPI)
	topology := NewTopology(MPI, job, "")
	launcher := ReplicaID{Type: v1beta1.ReplicaTypeLauncher}
	if leaders := MPI.Leaders(topology); len(leaders) != 2 || leaders[0].Type != v1beta1.ReplicaTypeWorker {
		t.Errorf("leaders %v, want both workers", leaders)
	}
	if d, ok := MPI.Decider(topology); !ok || d != launcher {
		t.Errorf("decider %v, want the launcher", d)
	}
	if MPI.Succeeded(topology, replicaPhasesOf{ReplicaID{Type: "worker"}: true, ReplicaID{Type: "worker", Index: 1}: true}) {
		t.Error("succeeded with the workers alone; the launcher decides")
	}
	if !MPI.Succeeded(topology, replicaPhasesOf{launcher: true}) {
		t.Error("not succeeded with the launcher")
	}
}

// TestOpenMPIExportsTheJobsVariables: an Open MPI launcher is given the
// mpirun options that pass its job and checkpoint variables and the API's
// address to the ranks; MPICH, which passes everything, is not.
func TestOpenMPIExportsTheJobsVariables(t *testing.T) {
	job := mpiJob(v1beta1.MPIImplementationOpenMPI)
	b := &Builder{Adapter: MPI, Job: job, Topology: NewTopology(MPI, job, "")}
	launcher, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeLauncher})
	if err != nil {
		t.Fatal(err)
	}
	var exports []string
	for _, v := range launcher.Spec.Containers[0].Env {
		if v.Name == "TENSORSTACK_MPI_EXPORTS" {
			exports = append(exports, v.Value)
		}
	}
	want := "-x KUBERNETES_SERVICE_HOST -x KUBERNETES_SERVICE_PORT -x TENSORSTACK_JOB_NAME -x TENSORSTACK_JOB_NAMESPACE -x TENSORSTACK_JOB_RESOURCE"
	if len(exports) != 1 || exports[0] != want {
		t.Errorf("TENSORSTACK_MPI_EXPORTS %q, want one, %q", exports, want)
	}
	job = mpiJob(v1beta1.MPIImplementationMPICH)
	b = &Builder{Adapter: MPI, Job: job, Topology: NewTopology(MPI, job, "")}
	if launcher, err = b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeLauncher}); err != nil {
		t.Fatal(err)
	}
	for _, v := range launcher.Spec.Containers[0].Env {
		if v.Name == "TENSORSTACK_MPI_EXPORTS" {
			t.Errorf("an MPICH launcher got %s=%q; MPICH passes everything", v.Name, v.Value)
		}
	}
}
