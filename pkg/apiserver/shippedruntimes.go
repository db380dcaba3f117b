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

package apiserver

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// The runtimes the server installs (--shipped-runtimes-image): one per
// framework, each a ClusterTrainingRuntime whose containers run IMAGE.
//
//go:embed shippedruntimes/*.yaml
var shippedRuntimeFiles embed.FS

// shippedImagePlaceholder stands for the image in the files.
const shippedImagePlaceholder = "IMAGE"

// AnnotationAutoUpdate on a shipped runtime says whether the server brings
// it back to what it ships each time it starts: "true" when the server
// made it. An administrator who changes a shipped runtime and wants to keep
// the change sets it to "false"; one who deletes it and wants it gone runs
// the server without --shipped-runtimes-image.
const AnnotationAutoUpdate = "batch.tensorstack.dev/autoupdate"

// ShippedRuntimes are the runtimes the server installs, on the image given.
func ShippedRuntimes(image string) ([]*v1beta1.ClusterTrainingRuntime, error) {
	names, err := fs.Glob(shippedRuntimeFiles, "shippedruntimes/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*v1beta1.ClusterTrainingRuntime, 0, len(names))
	for _, name := range names {
		raw, err := shippedRuntimeFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		raw = bytes.ReplaceAll(raw, []byte(shippedImagePlaceholder), []byte(image))
		rt := &v1beta1.ClusterTrainingRuntime{}
		if err := yaml.UnmarshalStrict(raw, rt); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if rt.Annotations == nil {
			rt.Annotations = map[string]string{}
		}
		rt.Annotations[AnnotationAutoUpdate] = "true"
		out = append(out, rt)
	}
	return out, nil
}

// installShippedRuntimes makes the server install its runtimes once it
// serves, through its own API, as kube-apiserver installs its default
// roles: a runtime that is missing is created, one the server made before
// (AnnotationAutoUpdate "true") is brought to what it ships now, and any
// other is left as its owner made it.
func installShippedRuntimes(server *genericapiserver.GenericAPIServer, image string) error {
	runtimes, err := ShippedRuntimes(image)
	if err != nil {
		return err
	}
	return server.AddPostStartHook("install-shipped-runtimes", func(ctx genericapiserver.PostStartHookContext) error {
		client, err := versioned.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return err
		}
		// The storage may not answer at once (an external etcd starting
		// beside the server): try again until it does.
		return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			for _, rt := range runtimes {
				if err := ensureShippedRuntime(ctx, client, rt); err != nil {
					klog.FromContext(ctx).Error(err, "Installing a shipped runtime; trying again", "runtime", rt.Name)
					return false, nil
				}
			}
			return true, nil
		})
	})
}

// ensureShippedRuntime creates the runtime, or updates the server's own.
func ensureShippedRuntime(ctx context.Context, client versioned.Interface, want *v1beta1.ClusterTrainingRuntime) error {
	runtimes := client.BatchV1beta1().ClusterTrainingRuntimes()
	got, err := runtimes.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = runtimes.Create(ctx, want, metav1.CreateOptions{FieldManager: "training-apiserver"})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("made meanwhile: %w", err)
		}
		return err
	case err != nil:
		return err
	case got.Annotations[AnnotationAutoUpdate] != "true":
		return nil
	}
	// Compare with the stored form, which defaults filled in.
	stored := want.DeepCopy()
	Scheme.Default(stored)
	if apiequality.Semantic.DeepEqual(stored.Spec, got.Spec) && apiequality.Semantic.DeepEqual(want.Labels, got.Labels) {
		return nil
	}
	got.Spec, got.Labels = want.Spec, want.Labels
	_, err = runtimes.Update(ctx, got, metav1.UpdateOptions{FieldManager: "training-apiserver"})
	return err
}
