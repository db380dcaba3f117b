// The arithmetic of the comparison page (compare.ts): the page's state in
// its URL, each job's metric as a line aligned by step, by time since its
// start or by wall clock, the value of every job at a hovered x, the final
// figures, the differences between the specs and the CSV. Its only import
// is plot.ts's, so that test/unit/comparison.test.mjs runs it without a
// browser.

import { numeric } from "./plot";
import type { Job, ProgressSample } from "./types";

// Align is what the x axis counts: the job's reported step, the seconds
// since the job started, or the wall clock (seconds since the epoch).
export type Align = "step" | "elapsed" | "time";
export const aligns: Align[] = ["step", "elapsed", "time"];

// maxCompared bounds the jobs one comparison reads: each is a request and a
// line on every chart, and past this the lines are no longer told apart.
export const maxCompared = 20;

// JobRef names a job as the URL does: its kind may be written as the
// resource (pytorchtrainingjobs), the kind or its short name; the page
// resolves it.
export interface JobRef {
  namespace: string;
  kind: string;
  name: string;
}

// CompareState is all the comparison shows, as #/compare?… holds it.
export interface CompareState {
  jobs: JobRef[];
  align: Align;
  // One metric, or "" for all of them.
  metric: string;
}

// parseCompareQuery reads the part of the fragment after "#/compare?":
// jobs=ns/kind/name,ns/kind/name&align=step&metric=loss. Entries that do not
// have three parts are left out, and so are repeats.
export function parseCompareQuery(query: string): CompareState {
  const params = new URLSearchParams(query);
  const seen = new Set<string>();
  const jobs: JobRef[] = [];
  for (const entry of (params.get("jobs") ?? "").split(",")) {
    const parts = entry.trim().split("/");
    if (parts.length !== 3 || parts.some((p) => p === "")) continue;
    const [namespace, kind, name] = parts;
    const key = `${namespace}/${kind.toLowerCase()}/${name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    jobs.push({ namespace, kind, name });
  }
  const align = params.get("align") as Align;
  return { jobs, align: aligns.includes(align) ? align : "step", metric: params.get("metric") ?? "" };
}

// compareHash is the fragment of a state: the names unescaped where they
// need no escaping (Kubernetes names have no "/" or ","), so that the
// address reads as what it shows.
export function compareHash(state: CompareState): string {
  const jobs = state.jobs.map((j) => [j.namespace, j.kind, j.name].map(encodeURIComponent).join("/")).join(",");
  let hash = `#/compare?jobs=${jobs}&align=${state.align}`;
  if (state.metric) hash += `&metric=${encodeURIComponent(state.metric)}`;
  return hash;
}

// ComparedJob is one job of the comparison: the job, the resource its kind
// is served as, and its whole run's samples, oldest first.
export interface ComparedJob {
  job: Job;
  resource: string;
  samples: ProgressSample[];
}

export function jobLabel(c: ComparedJob): string {
  return `${c.job.metadata.namespace}/${c.job.metadata.name}`;
}

// runStart is the moment "time since start" counts from, in milliseconds:
// the earliest of the job's first kept attempt, its current run's start and
// its first report, so that a job resumed after a pause still counts from
// its first start; its creation when it never started. The Python client's
// compare counts from the same moment.
export function runStart(job: Job, samples: ProgressSample[]): number {
  const times = [job.status.attempts?.[0]?.startTime, job.status.startTime, samples[0]?.reportTime]
    .filter((t): t is string => !!t)
    .map((t) => Date.parse(t))
    .filter((t) => Number.isFinite(t));
  return times.length > 0 ? Math.min(...times) : Date.parse(job.metadata.creationTimestamp);
}

// Series is one job's line on one chart: xs ascending, none twice.
export interface Series {
  xs: number[];
  ys: number[];
}

// alignedSeries is the job's metric over the chosen axis. By step, a step
// reported again (a run resumed from an earlier checkpoint) keeps its last
// value, and reports without a step are left out; by time, every report.
export function alignedSeries(c: ComparedJob, metric: string, align: Align): Series {
  const start = align === "elapsed" ? runStart(c.job, c.samples) : 0;
  const byX = new Map<number, number>();
  for (const sample of c.samples) {
    const m = sample.metrics?.find((x) => x.name === metric);
    const y = numeric(m?.value);
    if (y === undefined) continue;
    let x: number | undefined;
    if (align === "step") x = sample.step;
    else {
      const t = Date.parse(sample.reportTime);
      if (Number.isFinite(t)) x = align === "elapsed" ? (t - start) / 1000 : t / 1000;
    }
    if (x === undefined) continue;
    byX.set(x, y);
  }
  const xs = [...byX.keys()].sort((a, b) => a - b);
  return { xs, ys: xs.map((x) => byX.get(x)!) };
}

// metricNames are the numeric metrics any of the jobs reported, in the
// order they first appear.
export function metricNames(jobs: ComparedJob[]): string[] {
  const names = new Set<string>();
  for (const c of jobs) {
    for (const s of c.samples) for (const m of s.metrics ?? []) if (numeric(m.value) !== undefined) names.add(m.name);
    for (const m of c.job.status.progress?.metrics ?? []) if (numeric(m.value) !== undefined) names.add(m.name);
  }
  return [...names];
}

// indexAtOrBefore is the index of the last x at or before x, or -1 when the
// series starts after it: a hovered x shows each job's latest value there.
export function indexAtOrBefore(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

// finalMetrics is each metric's last reported numeric value: the history's,
// else the status's last report.
export function finalMetrics(c: ComparedJob): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of c.job.status.progress?.metrics ?? []) {
    const v = numeric(m.value);
    if (v !== undefined) out.set(m.name, v);
  }
  const fromHistory = new Map<string, number>();
  for (const s of c.samples) {
    for (const m of s.metrics ?? []) {
      const v = numeric(m.value);
      if (v !== undefined) fromHistory.set(m.name, v);
    }
  }
  for (const [name, v] of fromHistory) out.set(name, v);
  return out;
}

// runSeconds is the time the job ran: the accounting's, which leaves out
// time queued and paused, else from its start to its end (or to now).
export function runSeconds(c: ComparedJob, now: number): number | undefined {
  const running = c.job.status.accounting?.runningSeconds;
  if (running !== undefined) return running;
  const s = c.job.status;
  if (!s.startTime && !s.attempts?.length) return undefined;
  const end = s.completionTime ? Date.parse(s.completionTime) : now;
  return Math.max(0, (end - runStart(c.job, c.samples)) / 1000);
}

// The parts of a replica spec the diff reads; other fields of the job's
// spec are not compared.
interface ContainerSpec {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}
interface ReplicaSpecView {
  type: string;
  replicas?: number;
  template?: { spec?: { containers?: ContainerSpec[] } };
}

// specFields flattens what the diff compares of a job, per replica type and
// container: replicas, image, command, args, each variable of env and each
// resource, keyed "type/container field".
export function specFields(job: Job): Map<string, string> {
  const out = new Map<string, string>();
  const specs = (job.spec as { replicaSpecs?: ReplicaSpecView[] }).replicaSpecs ?? [];
  for (const rs of specs) {
    out.set(`${rs.type} replicas`, String(rs.replicas ?? 1));
    for (const c of rs.template?.spec?.containers ?? []) {
      const at = `${rs.type}/${c.name}`;
      if (c.image !== undefined) out.set(`${at} image`, c.image);
      if (c.command) out.set(`${at} command`, JSON.stringify(c.command));
      if (c.args) out.set(`${at} args`, JSON.stringify(c.args));
      for (const e of c.env ?? []) out.set(`${at} env ${e.name}`, e.value ?? (e.valueFrom ? JSON.stringify(e.valueFrom) : ""));
      for (const part of ["requests", "limits"] as const) {
        for (const [resource, quantity] of Object.entries(c.resources?.[part] ?? {})) out.set(`${at} ${part}.${resource}`, quantity);
      }
    }
  }
  return out;
}

// SpecDifference is one field that is not the same in every job: its value
// in each, undefined where a job does not set it.
export interface SpecDifference {
  field: string;
  values: (string | undefined)[];
}

// specDiff lists the fields that differ between the jobs, in the order the
// jobs name them, and counts those alike.
export function specDiff(jobs: Job[]): { differences: SpecDifference[]; alike: number } {
  const fields = jobs.map(specFields);
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const f of fields) for (const k of f.keys()) if (!seen.has(k)) seen.add(k), keys.push(k);
  const differences: SpecDifference[] = [];
  let alike = 0;
  for (const field of keys) {
    const values = fields.map((f) => f.get(field));
    if (values.every((v) => v === values[0])) alike++;
    else differences.push({ field, values });
  }
  return { differences, alike };
}

// csvField quotes a field that holds a comma, a quote or a line break.
function csvField(value: string | number | undefined): string {
  if (value === undefined) return "";
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

// comparisonCSV is every report of every job that carries one of metrics: a
// row a report, the columns the Python client's compare returns (job,
// step, elapsed_seconds, time) with the namespace and kind, then a column a
// metric.
export function comparisonCSV(jobs: ComparedJob[], metrics: string[]): string {
  const lines = [["job", "namespace", "kind", "step", "elapsed_seconds", "time", ...metrics].map(csvField).join(",")];
  for (const c of jobs) {
    const start = runStart(c.job, c.samples);
    for (const s of c.samples) {
      const byName = new Map((s.metrics ?? []).map((m) => [m.name, numeric(m.value)]));
      const values = metrics.map((m) => byName.get(m));
      if (values.every((v) => v === undefined)) continue;
      const t = Date.parse(s.reportTime);
      lines.push(
        [c.job.metadata.name, c.job.metadata.namespace, c.job.kind, s.step, Number.isFinite(t) ? (t - start) / 1000 : undefined, s.reportTime, ...values]
          .map(csvField)
          .join(","),
      );
    }
  }
  return lines.join("\r\n") + "\r\n";
}
