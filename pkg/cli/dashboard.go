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
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"

	"github.com/spf13/cobra"

	"tensorstack.dev/training/pkg/dashboard"
)

type dashboardOptions struct {
	port      int
	noBrowser bool
}

func newDashboardCommand(e *env) *cobra.Command {
	var o dashboardOptions
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Open the training jobs dashboard in a browser",
		Long: `Serve the training jobs dashboard on 127.0.0.1 and open it in a browser.

The dashboard lists every job of both kinds, live, in every namespace you may
list jobs in (else in your namespace); a job's page shows its conditions,
replicas, metrics, checkpoints, events, logs and spec; and it pauses, resumes,
deletes and creates jobs.

It acts with your kubeconfig's credentials (and kubectl's flags: --context,
--as, ...), so it may do what you may do, no more: what RBAC refuses is shown
refused, with the API server's message.

The URL printed carries a one-time sign-in token: the browser trades it for a
session cookie. Anyone with the URL can act as you while the command runs, so
do not share it. Ctrl-C stops the server. docs/dashboard.md says more.`,
		Example: `  kubectl training dashboard
  kubectl training dashboard --port 8080 --no-browser
  kubectl training dashboard --context staging --as alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), e)
		},
	}
	cmd.Flags().IntVar(&o.port, "port", 0, "The port to serve on, on 127.0.0.1; 0 picks a free one.")
	cmd.Flags().BoolVar(&o.noBrowser, "no-browser", false, "Print the URL only; do not open a browser.")
	return cmd
}

func (o *dashboardOptions) run(ctx context.Context, e *env) error {
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--port %d: must be 0 (any free port) to 65535", o.port)
	}
	c, err := e.clients()
	if err != nil {
		return err
	}
	// Loopback only: the dashboard acts with the user's credentials, so
	// nobody else may reach it.
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("listening for the dashboard: %w", err)
	}
	server := dashboard.NewServer(dashboard.StaticClients{Training: c.training, Kube: c.kube, Namespace: c.namespace})
	url := server.SignInURL(listener.Addr().String())
	fmt.Fprintf(e.streams.Out, "Serving the dashboard at\n\n    %s\n\nCtrl-C stops it.\n", url)
	if !o.noBrowser {
		openBrowser(e, url)
	}
	return server.Serve(ctx, listener)
}

// openBrowser opens url with xdg-open where there is one. Without one, or when
// it fails, the URL printed is the way in.
func openBrowser(e *env, url string) {
	path, err := exec.LookPath("xdg-open")
	if err != nil {
		fmt.Fprintln(e.streams.ErrOut, "No xdg-open here to open a browser: open the URL above.")
		return
	}
	cmd := exec.Command(path, url)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.streams.ErrOut, "Could not open a browser (%v): open the URL above.\n", err)
		return
	}
	// xdg-open returns once the browser has the URL; reap it then.
	go func() { _ = cmd.Wait() }()
}
