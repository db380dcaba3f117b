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

package install

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// loadClient is a user of the API while the installation changes under
// it: it creates a job (paused, so it makes no pods), reads it back and
// deletes it again, but for every keepEvery-th job, which stays for the
// check that nothing acknowledged is lost; through kube-apiserver and the
// APIService. Keeping few keeps the uninstall short.
type loadClient struct {
	e      *env
	prefix string

	mu       sync.Mutex
	requests int
	failures []string
	acked    []string // jobs whose create was acknowledged, and that it kept

	stop chan struct{}
	done chan struct{}
}

const keepEvery = 5

func startLoad(e *env, prefix string, every time.Duration) *loadClient {
	l := &loadClient{e: e, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop(every)
	return l
}

func (l *loadClient) loop(every time.Duration) {
	defer close(l.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		name := fmt.Sprintf("%s-%d", l.prefix, i)
		_, err := l.e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Create(ctx, pausedJob(name), metav1.CreateOptions{})
		l.record("create "+name, err)
		if err == nil {
			_, err = l.e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Get(ctx, name, metav1.GetOptions{})
			l.record("get "+name, err)
			if i%keepEvery == 0 {
				l.mu.Lock()
				l.acked = append(l.acked, name)
				l.mu.Unlock()
			} else {
				err = l.e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Delete(ctx, name, metav1.DeleteOptions{})
				l.record("delete "+name, err)
			}
		}
		cancel()
	}
}

func (l *loadClient) record(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if err != nil {
		l.failures = append(l.failures, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), what, err))
	}
}

// finish stops the client and returns its requests, failures and
// acknowledged jobs.
func (l *loadClient) finish() (int, []string, []string) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests, l.failures, l.acked
}

func pausedJob(name string) *v1beta1.PyTorchTrainingJob {
	return &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: jobsNamespace},
		Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			RunMode: &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}},
			ReplicaSpecs: []v1beta1.ReplicaSpec{{
				Type:     "master",
				Replicas: ptr.To[int32](1),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "pytorch", Image: "example.com/never-pulled:v1"}},
				}},
			}},
		}},
	}
}

// checkStored fails for every acknowledged job that is no longer stored.
func (e *env) checkStored(t *testing.T, acked []string) {
	t.Helper()
	list, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, j := range list.Items {
		stored[j.Name] = true
	}
	lost := 0
	for _, name := range acked {
		if !stored[name] {
			lost++
			if lost <= 5 {
				t.Errorf("job %s was acknowledged and is gone", name)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged jobs lost", lost, len(acked))
	}
}

// podWatch records every pod of one job it sees, by name, with each UID:
// a replica run twice shows two UIDs under one name.
type podWatch struct {
	mu   sync.Mutex
	uids map[string]map[string]bool
	stop context.CancelFunc
}

func watchJobPods(t *testing.T, e *env, job string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{uids: map[string]map[string]bool{}, stop: cancel}
	selector := v1beta1.LabelJobName + "=" + job
	list, err := e.kube.CoreV1().Pods(jobsNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		w.see(p.Name, string(p.UID))
	}
	watcher, err := e.kube.CoreV1().Pods(jobsNamespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range watcher.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				w.see(p.Name, string(p.UID))
			}
		}
	}()
	return w
}

func (w *podWatch) see(name, uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.uids[name] == nil {
		w.uids[name] = map[string]bool{}
	}
	w.uids[name][uid] = true
}

// result stops the watch and returns the pods seen, by name, and how many
// UIDs each had.
func (w *podWatch) result() map[string]int {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for name, uids := range w.uids {
		out[name] = len(uids)
	}
	return out
}
