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

package kubeflow

import "testing"

// pyTorchJob is the test PyTorchJob with the given fields (flow YAML without
// the braces) in the master's and the workers' training containers, and the
// overlays merged in.
func pyTorchJob(t *testing.T, masterFields, workerFields string, overlays ...string) string {
	t.Helper()
	replica := func(fields string) string {
		return `{template: {spec: {containers: [{name: pytorch, image: "torch:2.4", ` + fields + `}]}}}`
	}
	job := manifest(t, pyTorchJobManifest, `spec: {pytorchReplicaSpecs: {Master: `+replica(masterFields)+`, Worker: `+replica(workerFields)+`}}`)
	return manifest(t, job, overlays...)
}

// pyTorchJobAlike gives the master and the workers the same container fields.
func pyTorchJobAlike(t *testing.T, fields string, overlays ...string) string {
	t.Helper()
	return pyTorchJob(t, fields, fields, overlays...)
}

const (
	torchrunCommand = `command: [torchrun, train.py]`
	pythonCommand   = `command: [python, train.py]`
	twoGPUs         = `resources: {limits: {nvidia.com/gpu: 2}}`
	twoProcesses    = `spec: {nprocPerNode: "2"}`
)

func TestPyTorchReplicas(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{
			name:  "master first, so that it has rank 0",
			input: pyTorchJobManifest,
			path:  "spec.replicaSpecs[*].type",
			want:  `[master, worker]`,
		},
		{
			name: "types in any case",
			input: `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: lower}, spec: {pytorchReplicaSpecs: {
				worker: {template: {spec: {containers: [{name: pytorch, image: torch}]}}},
				MASTER: {template: {spec: {containers: [{name: pytorch, image: torch}]}}}}}}`,
			path: "spec.replicaSpecs[*].type",
			want: `[master, worker]`,
		},
		{
			name:  "restart policies, with Kubeflow's default OnFailure",
			input: manifest(t, pyTorchJobManifest, `spec: {pytorchReplicaSpecs: {Worker: {restartPolicy: ExitCode}}}`),
			path:  "spec.replicaSpecs[*].restartPolicy",
			want:  `[OnFailure, ExitCode]`,
		},
		{
			name:  "replicas",
			input: pyTorchJobManifest,
			path:  "spec.replicaSpecs[*].replicas",
			want:  `[1, 2]`,
		},
	})
}

func TestPyTorchTorchrunLaunch(t *testing.T) {
	commandLines := "spec.replicaSpecs[*].template.spec.containers[0]"
	runFieldCases(t, []fieldCase{
		{
			name:  "a Python program: no torchrun",
			input: pyTorchJobManifest,
			path:  "spec.torchrunConfig",
			want:  `null`,
		},
		{
			name:  "torchrun is enabled",
			input: pyTorchJobAlike(t, torchrunCommand, twoProcesses),
			path:  "spec.torchrunConfig",
			want:  `{enabled: true, procPerNode: "2"}`,
		},
		{
			name:  "torchrun is taken off the command",
			input: pyTorchJobAlike(t, `command: [torchrun, train.py, --epochs=3]`, twoProcesses),
			path:  commandLines + ".command",
			want:  `[[python, train.py, --epochs=3], [python, train.py, --epochs=3]]`,
		},
		{
			name:  "torchrun's options become extra options",
			input: pyTorchJobAlike(t, `command: [torchrun, --nproc_per_node, "2", --max-restarts=3, train.py, --lr], args: ["0.1"]`, twoProcesses),
			path:  "spec.torchrunConfig.extraOptions",
			want:  `[--nproc_per_node, "2", --max-restarts=3]`,
		},
		{
			name:  "the program keeps its arguments where they were",
			input: pyTorchJobAlike(t, `command: [torchrun, --nproc_per_node, "2", --max-restarts=3, train.py, --lr], args: ["0.1"]`, twoProcesses),
			path:  commandLines,
			want: `[{name: pytorch, image: "torch:2.4", command: [python, train.py, --lr], args: ["0.1"], resources: {}},
				{name: pytorch, image: "torch:2.4", command: [python, train.py, --lr], args: ["0.1"], resources: {}}]`,
		},
		{
			name:  "python -m torch.distributed.run keeps its interpreter",
			input: pyTorchJobAlike(t, `command: [/usr/bin/python3, -u, -m, torch.distributed.run, --standalone, train.py]`, twoProcesses),
			path:  commandLines + ".command",
			want:  `[[/usr/bin/python3, -u, train.py], [/usr/bin/python3, -u, train.py]]`,
		},
		{
			name:  "options and program in the args",
			input: pyTorchJobAlike(t, `command: [torchrun], args: [--nnodes=2, train.py, --x]`, twoProcesses),
			path:  commandLines,
			want: `[{name: pytorch, image: "torch:2.4", command: [python, train.py], args: [--x], resources: {}},
				{name: pytorch, image: "torch:2.4", command: [python, train.py], args: [--x], resources: {}}]`,
		},
		{
			name:  "options in the args go to the extra options too",
			input: pyTorchJobAlike(t, `command: [torchrun], args: [--nnodes=2, train.py, --x]`, twoProcesses),
			path:  "spec.torchrunConfig.extraOptions",
			want:  `[--nnodes=2]`,
		},
		{
			name:  "--no-python: the program runs without an interpreter",
			input: pyTorchJobAlike(t, `command: [torchrun, --no_python, /bin/trainer, --steps, "10"]`, twoProcesses),
			path:  "spec",
			want: `
replicaSpecs:
- {type: master, replicas: 1, restartPolicy: OnFailure, template: {metadata: {}, spec: {containers: [
    {name: pytorch, image: "torch:2.4", command: [/bin/trainer, --steps, "10"], resources: {}}]}}}
- {type: worker, replicas: 2, restartPolicy: OnFailure, template: {metadata: {}, spec: {containers: [
    {name: pytorch, image: "torch:2.4", command: [/bin/trainer, --steps, "10"], resources: {}}]}}}
runPolicy: {cleanUpPolicy: None}
torchrunConfig: {enabled: true, procPerNode: "2"}
`,
		},
		{
			name:  "a module",
			input: pyTorchJobAlike(t, `command: [torchrun, -m, trainer.main]`, twoProcesses),
			path:  "spec.torchrunConfig.extraOptions",
			want:  `[-m]`,
		},
		{
			name:  "the end of the options",
			input: pyTorchJobAlike(t, `command: [torchrun, --nproc-per-node=2, --, train.py]`, twoProcesses),
			path:  commandLines + ".command",
			want:  `[[python, train.py], [python, train.py]]`,
		},
		{
			name: "the training container is the one named pytorch",
			input: manifest(t, pyTorchJobManifest, twoProcesses, `spec: {pytorchReplicaSpecs: {
				Master: {template: {spec: {containers: [{name: proxy, image: envoy, command: [envoy]}, {name: pytorch, image: torch, command: [torchrun, train.py]}]}}},
				Worker: {template: {spec: {containers: [{name: proxy, image: envoy, command: [envoy]}, {name: pytorch, image: torch, command: [torchrun, train.py]}]}}}}}`),
			path: "spec.replicaSpecs[*].template.spec.containers[*].command",
			want: `[[[envoy], [python, train.py]], [[envoy], [python, train.py]]]`,
		},
		{
			name:  "an option without its value",
			input: pyTorchJobAlike(t, `command: [torchrun, --nproc_per_node]`),
			path:  commandLines + ".command",
			want:  `[[torchrun, --nproc_per_node], [torchrun, --nproc_per_node]]`,
			warnings: []string{
				"spec.pytorchReplicaSpecs.Master.template.spec.containers[0].command: seems to start torchrun in a way the converter does not recognise (a command line that begins with torchrun or python -m torch.distributed.run, then its options and the program); spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun",
				"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command: seems to start torchrun in a way the converter does not recognise (a command line that begins with torchrun or python -m torch.distributed.run, then its options and the program); spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun",
			},
		},
		{
			name:  "torchrun through a shell",
			input: pyTorchJob(t, `command: [bash, -c, "pip install -r req.txt && torchrun train.py"]`, pythonCommand),
			path:  "spec.torchrunConfig",
			want:  `null`,
			warnings: []string{
				"spec.pytorchReplicaSpecs.Master.template.spec.containers[0].command: seems to start torchrun in a way the converter does not recognise (a command line that begins with torchrun or python -m torch.distributed.run, then its options and the program); spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun",
			},
		},
		{
			name:  "the older launcher",
			input: pyTorchJobAlike(t, `command: [python, -m, torch.distributed.launch, train.py]`),
			path:  commandLines + ".command",
			want:  `[[python, -m, torch.distributed.launch, train.py], [python, -m, torch.distributed.launch, train.py]]`,
			warnings: []string{
				"spec.pytorchReplicaSpecs.Master.template.spec.containers[0].command: seems to start torchrun in a way the converter does not recognise (a command line that begins with torchrun or python -m torch.distributed.run, then its options and the program); spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun",
				"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command: seems to start torchrun in a way the converter does not recognise (a command line that begins with torchrun or python -m torch.distributed.run, then its options and the program); spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun",
			},
		},
		{
			name:  "only some replicas start torchrun",
			input: pyTorchJob(t, torchrunCommand, pythonCommand),
			path:  commandLines + ".command",
			want:  `[[torchrun, train.py], [python, train.py]]`,
			warnings: []string{
				"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command: does not start torchrun in a way the converter recognises, while other replicas do; ours starts torchrun for every replica or for none, so spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun",
			},
		},
		{
			name:  "replicas give torchrun different options",
			input: pyTorchJob(t, `command: [torchrun, --nproc_per_node=2, train.py]`, torchrunCommand),
			path:  "spec.torchrunConfig",
			want:  `null`,
			warnings: []string{
				`spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command: gives torchrun other options (none) than the replicas before it (["--nproc_per_node=2"]); ours has one set of torchrun options for the job, so spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun`,
			},
		},
	})
}

func TestPyTorchProcPerNode(t *testing.T) {
	withGPUs := torchrunCommand + ", " + twoGPUs
	runFieldCases(t, []fieldCase{
		{
			name:  "a number",
			input: pyTorchJobAlike(t, torchrunCommand, `spec: {nprocPerNode: "8"}`),
			path:  "spec.torchrunConfig.procPerNode",
			want:  `"8"`,
		},
		{
			name:  "gpu",
			input: pyTorchJobAlike(t, torchrunCommand, `spec: {nprocPerNode: gpu}`),
			path:  "spec.torchrunConfig.procPerNode",
			want:  `gpu`,
		},
		{
			name:  "auto with GPUs is one per GPU",
			input: pyTorchJobAlike(t, withGPUs, `spec: {nprocPerNode: auto}`),
			path:  "spec.torchrunConfig.procPerNode",
			want:  `gpu`,
		},
		{
			name:  "absent with GPUs: Kubeflow's default auto, one per GPU",
			input: pyTorchJobAlike(t, withGPUs),
			path:  "spec.torchrunConfig.procPerNode",
			want:  `gpu`,
		},
		{
			name:     "auto without GPUs",
			input:    pyTorchJobAlike(t, torchrunCommand, `spec: {nprocPerNode: auto}`),
			path:     "spec.torchrunConfig",
			want:     `{enabled: true}`,
			warnings: []string{"spec.nprocPerNode: not carried over: auto starts one process per CPU where there is no GPU; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1"},
		},
		{
			name:     "absent without GPUs",
			input:    pyTorchJobAlike(t, torchrunCommand),
			path:     "spec.torchrunConfig",
			want:     `{enabled: true}`,
			warnings: []string{"spec.nprocPerNode: absent, so Kubeflow hands torchrun auto, which starts one process per CPU where there is no GPU; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1"},
		},
		{
			name:     "auto with GPUs on the master only",
			input:    pyTorchJob(t, withGPUs, torchrunCommand, `spec: {nprocPerNode: auto}`),
			path:     "spec.torchrunConfig",
			want:     `{enabled: true}`,
			warnings: []string{"spec.nprocPerNode: not carried over: auto starts one process per CPU where there is no GPU; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1"},
		},
		{
			name:     "cpu",
			input:    pyTorchJobAlike(t, torchrunCommand, `spec: {nprocPerNode: cpu}`),
			path:     "spec.torchrunConfig",
			want:     `{enabled: true}`,
			warnings: []string{"spec.nprocPerNode: not carried over: cpu starts one process per CPU; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1"},
		},
		{
			name:     "not a value torchrun accepts",
			input:    pyTorchJobAlike(t, torchrunCommand, `spec: {nprocPerNode: "08"}`),
			path:     "spec.torchrunConfig",
			want:     `{enabled: true}`,
			warnings: []string{`spec.nprocPerNode: not carried over: "08" is not a number of processes torchrun accepts (auto, cpu, gpu or a positive number); ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1`},
		},
		{
			name:     "no torchrun to pass it to",
			input:    pyTorchJobAlike(t, pythonCommand, `spec: {nprocPerNode: "2"}`),
			path:     "spec.torchrunConfig",
			want:     `null`,
			warnings: []string{"spec.nprocPerNode: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled"},
		},
		{
			name:     "elasticPolicy.nProcPerNode wins, as in Kubeflow",
			input:    pyTorchJobAlike(t, torchrunCommand, `spec: {nprocPerNode: "2", elasticPolicy: {nProcPerNode: 4}}`),
			path:     "spec.torchrunConfig.procPerNode",
			want:     `"4"`,
			warnings: []string{"spec.nprocPerNode: dropped: spec.elasticPolicy.nProcPerNode (4) overrides it, as in Kubeflow"},
		},
	})
}

func TestPyTorchErrors(t *testing.T) {
	container := `{template: {spec: {containers: [{name: pytorch, image: torch}]}}}`
	runErrorCases(t, []errorCase{
		{
			name:  "elastic without a range and without workers",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {}, pytorchReplicaSpecs: {Worker: null}}`),
			err:   "document 0: spec.elasticPolicy: needs minReplicas or maxReplicas: without them Kubeflow takes the Worker replicas, and there is no Worker",
		},
		{
			name:  "a TensorFlow replica type",
			input: manifest(t, pyTorchJobManifest, `spec: {pytorchReplicaSpecs: {Chief: `+container+`}}`),
			err:   `document 0: spec.pytorchReplicaSpecs.Chief: unknown PyTorchJob replica type "Chief"; Kubeflow accepts Master, Worker`,
		},
		{
			name:  "no replicas",
			input: manifest(t, pyTorchJobManifest, `spec: {pytorchReplicaSpecs: null, tfReplicaSpecs: {Worker: `+container+`}}`),
			err:   "document 0: spec.pytorchReplicaSpecs: required: a PyTorchJob lists its replicas here",
		},
		{
			name:  "nprocPerNode not a string",
			input: manifest(t, pyTorchJobManifest, `spec: {nprocPerNode: 4}`),
			err:   "document 0: spec.nprocPerNode: must be a string, not the number 4",
		},
		{
			name:  "rdzvConf not a list",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {rdzvConf: {timeout: "900"}}}`),
			err:   "document 0: spec.elasticPolicy.rdzvConf: must be a list of {key, value}, not an object",
		},
		{
			name:  "an rdzvConf entry not an object",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {rdzvConf: ["timeout=900"]}}`),
			err:   `document 0: spec.elasticPolicy.rdzvConf[0]: must be an object, not the string "timeout=900"`,
		},
		{
			name:  "elasticPolicy not an object",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: true}`),
			err:   "document 0: spec.elasticPolicy: must be an object, not the boolean true",
		},
	})
}
