// Package kwoktools pins kwok for the local control plane and tests the
// project's own kwok Stages (hack/local/kwok-stages) with kwok's lifecycle
// code, without a cluster:
//
//	cd hack/tools/kwok && go test ./...
package kwoktools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

const stageFile = "../../local/kwok-stages/pod-exit-code.yaml"

var started = metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))

func runningPod(annotations map[string]string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: annotations}}
	for _, name := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: "img"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: name, Image: "img", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		})
	}
	p.Status.Phase = corev1.PodRunning
	return p
}

func loadLifecycle(t *testing.T) lifecycle.Lifecycle {
	t.Helper()
	objs, err := config.Load(context.Background(), stageFile)
	if err != nil {
		t.Fatalf("loading %s: %v", stageFile, err)
	}
	stages := config.FilterWithType[*internalversion.Stage](objs)
	if len(stages) != 1 {
		t.Fatalf("want 1 stage in %s, got %d", stageFile, len(stages))
	}
	lc, err := lifecycle.NewLifecycle(stages)
	if err != nil {
		t.Fatalf("building lifecycle: %v", err)
	}
	return lc
}

type statusPatch struct {
	Status corev1.PodStatus `json:"status"`
}

func TestPodExitCodeStage(t *testing.T) {
	lc := loadLifecycle(t)
	ctx := context.Background()

	cases := []struct {
		name        string
		pod         *corev1.Pod
		wantMatch   bool
		wantDelay   time.Duration
		wantPhase   corev1.PodPhase
		wantCodes   map[string]int32
		wantStarted bool
	}{
		{name: "no annotation keeps running", pod: runningPod(nil, "main")},
		{
			name: "pending pod is left alone",
			pod: func() *corev1.Pod {
				p := runningPod(map[string]string{"kwok.tensorstack.dev/exit-code": "0"}, "main")
				p.Status.Phase = corev1.PodPending
				return p
			}(),
			wantMatch: false,
		},
		{
			name:      "success with default duration",
			pod:       runningPod(map[string]string{"kwok.tensorstack.dev/exit-code": "0"}, "main", "sidecar"),
			wantMatch: true, wantDelay: time.Second, wantPhase: corev1.PodSucceeded,
			wantCodes: map[string]int32{"main": 0, "sidecar": 0}, wantStarted: true,
		},
		{
			name: "failure after 3s",
			pod: runningPod(map[string]string{
				"kwok.tensorstack.dev/exit-code":    "3",
				"kwok.tensorstack.dev/run-duration": "3s",
			}, "main"),
			wantMatch: true, wantDelay: 3 * time.Second, wantPhase: corev1.PodFailed,
			wantCodes: map[string]int32{"main": 3}, wantStarted: true,
		},
		{
			name: "per-container override, unparsable duration falls back to 1s",
			pod: runningPod(map[string]string{
				"kwok.tensorstack.dev/exit-code":         "0",
				"kwok.tensorstack.dev/exit-code.sidecar": "137",
				"kwok.tensorstack.dev/run-duration":      "soon",
			}, "main", "sidecar"),
			wantMatch: true, wantDelay: time.Second, wantPhase: corev1.PodFailed,
			wantCodes: map[string]int32{"main": 0, "sidecar": 137}, wantStarted: true,
		},
		{
			name: "override to zero makes the pod succeed",
			pod: runningPod(map[string]string{
				"kwok.tensorstack.dev/exit-code":      "1",
				"kwok.tensorstack.dev/exit-code.main": "0",
			}, "main"),
			wantMatch: true, wantDelay: time.Second, wantPhase: corev1.PodSucceeded,
			wantCodes: map[string]int32{"main": 0}, wantStarted: true,
		},
		{
			name: "no container statuses yet",
			pod: func() *corev1.Pod {
				p := runningPod(map[string]string{"kwok.tensorstack.dev/exit-code": "2"}, "main")
				p.Status.ContainerStatuses = nil
				return p
			}(),
			wantMatch: true, wantDelay: time.Second, wantPhase: corev1.PodFailed,
			wantCodes: map[string]int32{"main": 2},
		},
		{
			name: "terminating pod is left to pod-delete",
			pod: func() *corev1.Pod {
				p := runningPod(map[string]string{"kwok.tensorstack.dev/exit-code": "0"}, "main")
				p.DeletionTimestamp = &started
				return p
			}(),
		},
	}

	renderer := gotpl.NewRenderer(gotpl.FuncMap{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			event := &lifecycle.Event{Labels: tc.pod.Labels, Annotations: tc.pod.Annotations, Data: tc.pod}
			stage, err := lc.Match(ctx, event)
			if err != nil {
				t.Fatalf("match: %v", err)
			}
			if (stage != nil) != tc.wantMatch {
				t.Fatalf("matched=%v, want %v", stage != nil, tc.wantMatch)
			}
			if stage == nil {
				return
			}
			delay, ok, err := stage.Delay(ctx, event, time.Now())
			if err != nil || !ok || delay != tc.wantDelay {
				t.Fatalf("delay = %v, %v, %v; want %v", delay, ok, err, tc.wantDelay)
			}
			var patches []*lifecycle.Patch
			_, err = stage.DoSteps(0, nil, tc.pod, renderer,
				func(*internalversion.StageEvent) error { return nil },
				func() error { t.Fatal("unexpected delete"); return nil },
				func(p *lifecycle.Patch) error { patches = append(patches, p); return nil },
				func(*lifecycle.Apply) error { t.Fatal("unexpected apply"); return nil })
			if err != nil {
				t.Fatalf("steps: %v", err)
			}
			if len(patches) != 1 || patches[0].Subresource != "status" {
				t.Fatalf("want one status patch, got %+v", patches)
			}
			var got statusPatch
			if err := json.Unmarshal(patches[0].Data, &got); err != nil {
				t.Fatalf("patch %s: %v", patches[0].Data, err)
			}
			if got.Status.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", got.Status.Phase, tc.wantPhase)
			}
			if len(got.Status.ContainerStatuses) != len(tc.wantCodes) {
				t.Fatalf("container statuses: %+v", got.Status.ContainerStatuses)
			}
			for _, cs := range got.Status.ContainerStatuses {
				term := cs.State.Terminated
				if term == nil {
					t.Fatalf("container %s not terminated: %+v", cs.Name, cs.State)
				}
				if want, ok := tc.wantCodes[cs.Name]; !ok || term.ExitCode != want {
					t.Errorf("container %s exit code %d, want %d", cs.Name, term.ExitCode, want)
				}
				if wantReason := map[bool]string{true: "Completed", false: "Error"}[term.ExitCode == 0]; term.Reason != wantReason {
					t.Errorf("container %s reason %q, want %q", cs.Name, term.Reason, wantReason)
				}
				if cs.Ready {
					t.Errorf("container %s still ready", cs.Name)
				}
				if tc.wantStarted && !term.StartedAt.Equal(&started) {
					t.Errorf("container %s startedAt %v, want the running state's %v", cs.Name, term.StartedAt, started)
				}
			}
			for _, cond := range got.Status.Conditions {
				if (cond.Type == corev1.PodReady || cond.Type == corev1.ContainersReady) && cond.Status != corev1.ConditionFalse {
					t.Errorf("condition %s = %s, want False", cond.Type, cond.Status)
				}
			}
		})
	}
}
