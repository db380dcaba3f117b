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
  history?: ProgressHistory;
  historyRefused?: import("./api").Status;
}

// Every stored report's metrics of a job, as its progresshistory gives them.
export interface ProgressHistory {
  samples?: ProgressSample[];
  thinnedSamples?: number;
}

// A job and its progress history, as GET .../history gives them: what the
// comparison reads of each job, without the job page's pods and events.
export interface JobWithHistory {
  job: Job;
  history?: ProgressHistory;
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

// A search (TuningJob) as a row of the searches list, as GET /api/tuningjobs
// gives it (pkg/dashboard/tuning.go).
export interface TuningSummary {
  namespace: string;
  name: string;
  uid: string;
  created: string;
  // Pending, Running, Suspended, Succeeded or Failed.
  state: string;
  objective: TuningObjective;
  algorithm: string;
  // asha or medianStop; absent for none.
  earlyStopping?: string;
  counts: TrialCounts;
  bestTrial?: string;
  bestValue?: string;
  // The trials made so far, of maxTrials.
  trials: number;
  maxTrials: number;
  parallelTrials: number;
}

export interface TuningObjective {
  metric: string;
  direction: "minimize" | "maximize";
  goal?: string;
  trialValue?: string;
  step?: number;
}

export interface TuningParameter {
  name: string;
  type: "double" | "int" | "categorical";
  min?: string;
  max?: string;
  step?: string;
  logScale?: boolean;
  values?: string[];
}

export interface TrialCounts {
  pending?: number;
  running?: number;
  paused?: number;
  succeeded?: number;
  failed?: number;
  stopped?: number;
}

// One trial of a search (status.trials): its values are decimal strings.
export interface TrialStatus {
  name: string;
  index: number;
  parameters?: { name: string; value: string }[];
  // Pending, Running, Paused, Succeeded, Failed or Stopped.
  state: string;
  value?: string;
  progress?: number;
  rung?: number;
  rungValues?: string[];
  promotions?: number;
  // The objective over the trial's progress, at most 16 points.
  curve?: { progress: number; value: string }[];
  message?: string;
}

export interface TuningJob {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string; creationTimestamp: string; resourceVersion?: string };
  spec: {
    parameters?: TuningParameter[];
    objective: TuningObjective;
    algorithm?: { name?: string; seed?: number; startupTrials?: number };
    earlyStopping?: {
      medianStop?: { startStep?: number; minTrials?: number };
      asha?: { resource?: string; minResource: number; reductionFactor?: number; rungs?: number };
    };
    parallelTrials?: number;
    maxTrials?: number;
    maxFailedTrials?: number;
    suspend?: boolean;
  };
  status: {
    conditions?: Condition[];
    seed?: number;
    trials?: TrialStatus[];
    counts?: TrialCounts;
    bestTrial?: string;
    bestValue?: string;
    startTime?: string;
    completionTime?: string;
  };
}

// A search's page: the search whole, its one-word state, and the kind of job
// its trials are (absent for one the dashboard does not know).
export interface TuningDetail {
  search: TuningJob;
  state: string;
  trialKind?: string;
  trialResource?: string;
}

// A record of a deleted job as a row of the History list, as GET
// /api/records gives it (pkg/dashboard/history.go).
export interface RecordSummary {
  namespace: string;
  // The record's name: the job's and the start of its UID.
  name: string;
  jobName: string;
  jobKind: string;
  phase?: string;
  // How long the job ran, as kubectl prints it.
  ran?: string;
  // When the job was deleted.
  deleted: string;
  step?: number;
  leftOut?: string[];
}

// One of a deleted job's events, as its record keeps it.
export interface RecordedEvent {
  type: string;
  reason: string;
  message?: string;
  count?: number;
  firstTime?: string;
  lastTime?: string;
  source?: string;
}

// What the server keeps of a deleted job (TrainingJobRecord).
export interface TrainingJobRecord {
  metadata: { name: string; namespace: string; uid: string; creationTimestamp: string };
  jobKind: string;
  jobName: string;
  jobUID: string;
  phase?: string;
  jobCreationTime: string;
  deletionTime: string;
  startTime?: string;
  completionTime?: string;
  // The job as last stored, less what leftOut names.
  job?: Job;
  progress?: ProgressSample[];
  thinnedSamples?: number;
  // Newest first.
  events?: RecordedEvent[];
  leftOut?: string[];
}

// A record's page: the record whole, its kind's resource and the job's spec
// as YAML (pkg/dashboard/history.go).
export interface RecordDetail {
  record: TrainingJobRecord;
  resource?: string;
  yaml: string;
}
