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

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Kubeflow never starts torchrun: a PyTorchJob's container does, with a
// command such as `torchrun train.py`, and torchrun reads the nodes, ranks
// and rendezvous from the PET_* variables the operator sets. Ours sets those
// variables only with spec.torchrunConfig enabled, and then starts torchrun
// itself in front of the container's program. So a container that starts
// torchrun has its launcher taken off, leaving the program to our torchrun,
// and the options it gave torchrun become spec.torchrunConfig.extraOptions,
// which follow the options ours generates: as in Kubeflow, where options on
// the command line override the PET_* variables, what the user wrote wins.

// pythonInterpreter matches python, python3, python3.12 and paths to them,
// as our controller does when it puts torchrun in front of a command.
var pythonInterpreter = regexp.MustCompile(`^python[0-9.]*$`)

// torchrunFlags are the torchrun options that take no value; every other
// option takes one, either after = or as the next word.
var torchrunFlags = map[string]bool{
	"standalone":         true,
	"m":                  true,
	"module":             true,
	"run-path":           true,
	"virtual-local-rank": true,
	"no-python":          true,
}

// torchrunLaunch is a container's command line that starts torchrun, cut
// into its parts.
type torchrunLaunch struct {
	// interpreter starts the program without torchrun: the Python
	// interpreter (with its -u) that `python -m torch.distributed.run` used,
	// python for a torchrun command, nothing under --no-python.
	interpreter []string
	// options are the options given to torchrun, as written.
	options []string
	// program is the script or module torchrun runs, with its arguments.
	program []string
	// inCommand is how many words of program stay in the container's
	// command; the rest are its args. At least one, so that our controller
	// sees the program to put torchrun in front of.
	inCommand int
}

// parseTorchrunLaunch recognises a command line that starts with torchrun or
// python -m torch.distributed.run and is followed by a program.
func parseTorchrunLaunch(c *corev1.Container) (*torchrunLaunch, bool) {
	line := append(slices.Clone(c.Command), c.Args...)
	if len(line) == 0 {
		return nil, false
	}
	launch := &torchrunLaunch{}
	i := 0
	switch first := path.Base(line[0]); {
	case first == "torchrun":
		launch.interpreter, i = []string{"python"}, 1
	case pythonInterpreter.MatchString(first):
		i = 1
		for i < len(line) && line[i] == "-u" {
			i++
		}
		if i+1 >= len(line) || line[i] != "-m" || line[i+1] != "torch.distributed.run" {
			return nil, false
		}
		launch.interpreter, i = slices.Clone(line[:i]), i+2
	default:
		return nil, false
	}

	for i < len(line) && strings.HasPrefix(line[i], "-") {
		option := line[i]
		if option == "--" {
			i++
			break
		}
		name, _, withValue := strings.Cut(strings.TrimLeft(option, "-"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		switch {
		case name == "no-python":
			// The program is not Python: it runs without an interpreter,
			// and our controller adds --no-python itself for it.
			launch.interpreter = nil
			i++
		case withValue || torchrunFlags[name]:
			launch.options = append(launch.options, option)
			i++
		case i+1 < len(line):
			launch.options = append(launch.options, option, line[i+1])
			i += 2
		default:
			return nil, false // an option without its value
		}
	}
	if i >= len(line) {
		return nil, false // no program
	}
	launch.program = slices.Clone(line[i:])
	launch.inCommand = max(len(c.Command)-i, 1)
	return launch, true
}

// apply takes the launcher off the container: the command becomes the
// interpreter and the program, the args what followed them.
func (l *torchrunLaunch) apply(c *corev1.Container) {
	c.Command = append(slices.Clone(l.interpreter), l.program[:l.inCommand]...)
	c.Args = nil
	if rest := l.program[l.inCommand:]; len(rest) > 0 {
		c.Args = slices.Clone(rest)
	}
}

// notEnabled ends each warning about a job whose torchrun is not enabled.
const notEnabled = "spec.torchrunConfig is not enabled and the commands are kept as they are, without the PET_* variables Kubeflow sets for torchrun"

// startTorchrun decides whether the converted job has our controller start
// torchrun: when the training container of every replica starts torchrun,
// with the same options, since ours has one set for the job. Then it takes
// the launchers off and returns the options. paths are the replicas' paths
// in the input.
func startTorchrun(replicas []v1beta1.ReplicaSpec, paths []*field.Path, w *warnings) ([]string, bool) {
	containers := make([]*corev1.Container, len(replicas))
	commandPaths := make([]*field.Path, len(replicas))
	launches := make([]*torchrunLaunch, len(replicas))
	var first *torchrunLaunch
	for i := range replicas {
		pod := &replicas[i].Template.Spec
		commandPaths[i] = paths[i].Child("template", "spec", "containers")
		c := v1beta1.TrainingContainer(pod.Containers, v1beta1.PyTorchContainerName)
		if c < 0 {
			continue
		}
		containers[i] = &pod.Containers[c]
		commandPaths[i] = commandPaths[i].Index(c).Child("command")
		if launch, ok := parseTorchrunLaunch(containers[i]); ok {
			launches[i] = launch
			if first == nil {
				first = launch
			}
		}
	}

	if first == nil {
		for i, c := range containers {
			if c != nil && mentionsTorchrun(c) {
				w.add(commandPaths[i], "seems to start torchrun in a way the converter does not recognise "+
					"(a command line that begins with torchrun or python -m torch.distributed.run, then its options and the program); %s", notEnabled)
			}
		}
		return nil, false
	}
	for i, launch := range launches {
		switch {
		case launch == nil:
			w.add(commandPaths[i], "does not start torchrun in a way the converter recognises, while other replicas do; "+
				"ours starts torchrun for every replica or for none, so %s", notEnabled)
			return nil, false
		case !slices.Equal(launch.options, first.options):
			w.add(commandPaths[i], "gives torchrun other options (%s) than the replicas before it (%s); ours has one set of torchrun options for the job, so %s",
				quoteWords(launch.options), quoteWords(first.options), notEnabled)
			return nil, false
		}
	}
	for i, launch := range launches {
		launch.apply(containers[i])
	}
	return first.options, true
}

// mentionsTorchrun reports whether a command line names a torch launcher at
// all, e.g. through a shell.
func mentionsTorchrun(c *corev1.Container) bool {
	for _, word := range append(slices.Clone(c.Command), c.Args...) {
		if strings.Contains(word, "torchrun") || strings.Contains(word, "torch.distributed.run") || strings.Contains(word, "torch.distributed.launch") {
			return true
		}
	}
	return false
}

func quoteWords(words []string) string {
	if len(words) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q", words)
}
