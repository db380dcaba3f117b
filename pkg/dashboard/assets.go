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

package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets holds the front end: app/ is the bundle make dashboard builds (never
// committed), missing.html the page a binary built without it serves. Both
// sit in one directory so that the pattern always matches a file and the
// package compiles either way.
//
//go:embed assets
var assets embed.FS

// frontEnd serves the bundle, or, when the binary was built without one, a
// page that says how to build it.
func frontEnd() http.Handler {
	app, err := fs.Sub(assets, "assets/app")
	if err == nil {
		if _, err = fs.Stat(app, "index.html"); err == nil {
			return http.FileServerFS(app)
		}
	}
	missing, _ := fs.ReadFile(assets, "assets/missing.html")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(missing)
	})
}
