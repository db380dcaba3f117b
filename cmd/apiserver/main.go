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

// Command training-apiserver serves every job kind of
// batch.tensorstack.dev/v1beta1 (the table of kinds, pkg/apis/batch/kinds.go)
// as a Kubernetes aggregated API server.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apiserver"
	"tensorstack.dev/training/pkg/serverflags"
)

func main() {
	os.Exit(cli.Run(newCommand()))
}

func newCommand() *cobra.Command {
	options := apiserver.NewOptions()
	common := serverflags.New("training-apiserver")
	cmd := &cobra.Command{
		Use:   "training-apiserver",
		Short: "Serve TensorStack training jobs as a Kubernetes aggregated API",
		Long: "training-apiserver serves " + batch.KindsInProse(false, false) + " in " +
			"batch.tensorstack.dev/v1beta1 from its own etcd: an external cluster given by " +
			"--etcd-servers, or an etcd embedded in the process.",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if exit, err := common.Apply(cmd.OutOrStdout()); exit || err != nil {
				return err
			}
			if err := options.Validate(); err != nil {
				return err
			}
			config, err := options.Config()
			if err != nil {
				return err
			}
			server, err := config.Complete().New()
			if err != nil {
				return err
			}
			ctx := genericapiserver.SetupSignalContext()
			startGCTuner(ctx, os.Getenv)
			return server.Run(ctx)
		},
	}
	options.AddFlags(cmd.Flags())
	common.AddFlags(cmd.Flags())
	return cmd
}
