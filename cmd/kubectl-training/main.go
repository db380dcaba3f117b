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

// Command kubectl-training is the kubectl plugin for TensorStack training
// jobs: on the PATH, kubectl runs it as `kubectl training`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"tensorstack.dev/training/pkg/cli"
)

func main() {
	// Ctrl-C ends a followed log or a watch cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := cli.NewRootCommand(cli.Config{Streams: streams}).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, cli.ErrorMessage(err))
		stop()
		os.Exit(1)
	}
}
