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

package tensorboard

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

func testJob() *owner.Job {
	job := &v1beta1.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
	return &owner.Job{Object: job, Kind: "PyTorchTrainingJob"}
}

func TestDeployment(t *testing.T) {
	cases := []struct {
		name       string
		filesets   []string
		wantArgs   []string
		wantClaims []string
		wantMounts []string
		wantErr    bool
	}{
		{name: "one log directory", filesets: []string{"t9k://pvc/logs/mnist/run1"},
			wantArgs:   []string{"--logdir=/t9k/logs/logs/mnist/run1", "--bind_all", "--port=6006"},
			wantClaims: []string{"logs"}, wantMounts: []string{"/t9k/logs/logs"}},
		{name: "several, one PVC mounted once", filesets: []string{"t9k://pvc/logs/a", "t9k://pvc/logs/b/", "t9k://pvc/other"},
			wantArgs: []string{"--logdir_spec=logs/a:/t9k/logs/logs/a,logs/b:/t9k/logs/logs/b,other:/t9k/logs/other",
				"--bind_all", "--port=6006"},
			wantClaims: []string{"logs", "other"}, wantMounts: []string{"/t9k/logs/logs", "/t9k/logs/other"}},
		{name: "a path cannot leave its PVC", filesets: []string{"t9k://pvc/logs/../../etc"},
			wantArgs:   []string{"--logdir=/t9k/logs/logs/etc", "--bind_all", "--port=6006"},
			wantClaims: []string{"logs"}, wantMounts: []string{"/t9k/logs/logs"}},
		{name: "not a PVC location", filesets: []string{"s3://bucket/logs"}, wantErr: true},
		{name: "no filesets", filesets: nil, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Deployment(testJob(), &v1beta1.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: tc.filesets})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			pod := d.Spec.Template
			c := pod.Spec.Containers[0]
			if !slices.Equal(c.Args, tc.wantArgs) {
				t.Errorf("args %v, want %v", c.Args, tc.wantArgs)
			}
			var claims, mounts []string
			for _, v := range pod.Spec.Volumes {
				if v.PersistentVolumeClaim == nil || !v.PersistentVolumeClaim.ReadOnly {
					t.Errorf("volume %s is not a read-only PVC", v.Name)
					continue
				}
				claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			}
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly {
					t.Errorf("mount %s is writable", m.MountPath)
				}
				mounts = append(mounts, m.MountPath)
			}
			if !slices.Equal(claims, tc.wantClaims) || !slices.Equal(mounts, tc.wantMounts) {
				t.Errorf("claims %v mounts %v, want %v %v", claims, mounts, tc.wantClaims, tc.wantMounts)
			}
			if _, selected := pod.Labels[v1beta1.LabelJobName]; selected {
				t.Errorf("the job's headless Service would select the TensorBoard pods: %v", pod.Labels)
			}
			if !reflect.DeepEqual(Service(testJob()).Spec.Selector, pod.Labels) {
				t.Errorf("the Service does not select the TensorBoard pods")
			}
			if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != "uid-j" || d.Name != "j-tensorboard" {
				t.Errorf("deployment %s controlled by %+v", d.Name, ref)
			}
		})
	}
}

// TestSpecHashFollowsTheSpec: any change of the spec changes the hash that
// decides whether the Deployment is updated.
func TestSpecHashFollowsTheSpec(t *testing.T) {
	base := &v1beta1.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: []string{"t9k://pvc/logs/a"}}
	same := base.DeepCopy()
	image := base.DeepCopy()
	image.Image = "tensorboard:3"
	logs := base.DeepCopy()
	logs.TrainingLogFilesets = append(logs.TrainingLogFilesets, "t9k://pvc/logs/b")
	if specHash(base) != specHash(same) {
		t.Errorf("equal specs hash differently")
	}
	if specHash(base) == specHash(image) || specHash(base) == specHash(logs) {
		t.Errorf("a changed spec keeps its hash")
	}
}
