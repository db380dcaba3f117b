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

package cli

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completionFunc is what cobra calls to complete an argument or flag value.
type completionFunc = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective)

// completeJobArg completes the JOB argument with the jobs of the namespace:
// NAME where only one kind has the name, tj/NAME and pj/NAME where both do,
// and KIND/NAME of the kind once KIND/ is typed.
func completeJobArg(e *env) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return jobCompletions(cmd, e, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func jobCompletions(cmd *cobra.Command, e *env, toComplete string) []cobra.Completion {
	c, err := e.clients()
	if err != nil {
		return nil
	}
	kindsOf := map[string][]*jobKind{}
	for _, kind := range jobKinds {
		jobs, err := kind.Client(c.training, c.namespace).List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			continue // complete what can be read
		}
		for _, job := range jobs {
			kindsOf[job.GetName()] = append(kindsOf[job.GetName()], kind)
		}
	}

	var candidates []string
	if word, _, typedKind := strings.Cut(toComplete, "/"); typedKind {
		if kind, ok := kindNamed(word); ok {
			for name, kinds := range kindsOf {
				if containsKind(kinds, kind) {
					candidates = append(candidates, word+"/"+name)
				}
			}
		}
	} else {
		for name, kinds := range kindsOf {
			if len(kinds) == 1 {
				candidates = append(candidates, name)
				continue
			}
			for _, kind := range kinds {
				candidates = append(candidates, kind.Ref(name))
			}
		}
	}
	return withPrefix(candidates, toComplete)
}

func containsKind(kinds []*jobKind, kind *jobKind) bool {
	for _, k := range kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// completeJobThenReplica completes JOB, then the job's replicas (worker-0).
func completeJobThenReplica(e *env) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return jobCompletions(cmd, e, toComplete), cobra.ShellCompDirectiveNoFileComp
		case 1:
			found, ok := completedJob(cmd, e, args[0])
			if !ok {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			spec := found.job.CommonSpec()
			var replicas []string
			for _, r := range spec.ReplicaSpecs {
				for i := range replicaCount(spec, r.Type) {
					replicas = append(replicas, replicaRef{Type: r.Type, Index: i}.String())
				}
			}
			return withPrefix(replicas, toComplete), cobra.ShellCompDirectiveNoFileComp
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// completeReplicaTypes completes --replica with the replica types of the job
// already named.
func completeReplicaTypes(e *env) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		found, ok := completedJob(cmd, e, args[0])
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(replicaTypes(found.job.CommonSpec()), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func completedJob(cmd *cobra.Command, e *env, arg string) (foundJob, bool) {
	c, err := e.clients()
	if err != nil {
		return foundJob{}, false
	}
	found, err := c.findJob(cmd.Context(), arg)
	return found, err == nil
}

// registerConnectionCompletions completes -n with the cluster's namespaces
// and --context with the kubeconfig's contexts, as kubectl does.
func registerConnectionCompletions(root *cobra.Command, e *env, flags *ConnectionFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		kube, err := e.KubeClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := kube.CoreV1().Namespaces().List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, len(list.Items))
		for i, ns := range list.Items {
			names[i] = ns.Name
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("context", func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		config, err := flags.ClientConfig().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(config.Contexts))
		for name := range config.Contexts {
			names = append(names, name)
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// withPrefix keeps the candidates that start with what was typed, sorted.
func withPrefix(candidates []string, toComplete string) []cobra.Completion {
	var kept []cobra.Completion
	for _, c := range candidates {
		if strings.HasPrefix(c, toComplete) {
			kept = append(kept, c)
		}
	}
	sort.Strings(kept)
	return kept
}
