// The shapes the server sends: rows of the list (pkg/dashboard/summary.go),
// whole jobs (batch.tensorstack.dev/v1beta1) and the job page's detail.

export interface JobSummary {
  kind: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  labels?: Record<string, string>;
  created: string;
  phase?: string;
  paused?: boolean;
  percent?: number;
  step?: number;
  totalSteps?: number;
  estimatedFinishTime?: string;
  queue?: string;
  restarts: number;
  interruptions?: number;
  lostSteps?: number;
  lostReplicaSeconds?: number;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Metric {
  name: string;
  value: string;
}

export interface ProgressSample {
  reportTime: string;
  step?: number;
  epoch?: number;
  metrics: Metric[];
}

export interface ContainerStatus {
  name: string;
  state?: string;
  exitCode?: number;
  reason?: string;
  lastTermination?: { exitCode: number; signal?: number; reason?: string; message?: string; finishedAt?: string };
}

export interface ReplicaStatus {
  name: string;
  uid?: string;
  phase?: string;
  containers?: ContainerStatus[];
  reason?: string;
  restartAt?: string;
  restartCount?: number;
}

export interface Job {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string; creationTimestamp: string; labels?: Record<string, string> };
  spec: {
    runMode?: { pause?: { enabled?: boolean }; debug?: { enabled?: boolean } };
    elastic?: { enabled?: boolean; minReplicas?: number; maxReplicas?: number; expectedReplicas?: number };
  };
  status: {
    phase?: string;
    conditions?: Condition[];
    tasks?: { type: string; restartCount?: number; replicaStatus?: ReplicaStatus[] }[];
    backoffCount?: number;
    startTime?: string;
    completionTime?: string;
    progress?: {
      percent?: number;
      step?: number;
      totalSteps?: number;
      epoch?: number;
      totalEpochs?: number;
      estimatedFinishTime?: string;
      metrics?: Metric[];
      message?: string;
      reportTime?: string;
      reporter?: string;
      history?: ProgressSample[];
    };
    checkpoint?: {
      latest?: { path: string; step?: number; epoch?: number; sizeBytes?: number; reporter?: string; reportTime: string };
      history?: { path: string; step?: number; epoch?: number; reportTime: string }[];
      requestTime?: string;
      requestReason?: string;
    };
    accounting?: {
      queuedSeconds?: number;
      startingSeconds?: number;
      runningSeconds?: number;
      pausedSeconds?: number;
      state?: string;
      stateSince?: string;
      interruptions?: number;
      lostReplicaSeconds?: number;
      lostSteps?: number;
      recent?: { time: string; reason: string; replicas: number; lostSeconds: number; lostReplicaSeconds: number; lostSteps?: number }[];
    };
    attempts?: Attempt[];
    attemptCount?: number;
    suspectNodes?: { name: string; reason: string; message?: string; time: string }[];
  };
}

// Attempt is one start of a job's pods, as status.attempts keeps it.
export interface Attempt {
  number: number;
  startTime: string;
  endTime?: string;
  reason?: string;
  message?: string;
  resumedFrom?: { path: string; step?: number };
  lastCheckpoint?: { path: string; step?: number };
  steps?: number;
  failedReplicas?: { name: string; node?: string; exitCode?: number; reason?: string; time: string; logs?: string; logError?: string }[];
  failedReplicaCount?: number;
}

export interface PodView {
  name: string;
  replicaType: string;
  replicaIndex: string;
  node?: string;
  phase: string;
  containers: { name: string; state: string; reason?: string; exitCode?: number; restarts: number }[];
}

export interface EventView {
  type: string;
  reason: string;
  message: string;
  count: number;
  last: string;
}

export interface JobDetail {
  job: Job;
  yaml: string;
  pods: PodView[];
  podsRefused?: import("./api").Status;
  events: EventView[];
  eventsRefused?: import("./api").Status;
  // Asked for with ?history=true: every stored report's metrics.
  history?: { samples?: ProgressSample[]; thinnedSamples?: number };
  historyRefused?: import("./api").Status;
}

// A runtime a job can be made from, as GET /api/runtimes gives it
// (pkg/dashboard/runtimes.go).
export interface RuntimeView {
  name: string;
  scope: "Cluster" | "Namespace";
  namespace?: string;
  // What spec.runtimeRef.kind names: ClusterTrainingRuntime or TrainingRuntime.
  runtimeKind: string;
  // The job kind it makes; "" for one the dashboard does not know.
  kind: string;
  resource: string;
  image?: string;
  replicaTypes: string[];
}

// The runtimes of the cluster and of one namespace; a scope the user may not
// list is named in forbidden, with the API's refusal in refused.
export interface RuntimeList {
  namespace: string;
  items: RuntimeView[];
  forbidden?: string[];
  refused?: import("./api").Status[];
}
