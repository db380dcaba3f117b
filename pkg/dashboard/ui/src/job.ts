// A job's page: its state, conditions, replicas, metrics, checkpoints,
// accounting, attempts, events, logs and spec, following the job's watch
// stream.

import { buttons } from "./actions";
import { describeStatus, follow, jobPath, request, Status } from "./api";
import { MetricCharts } from "./charts";
import { h, replace } from "./dom";
import { age, duration, timestamp, until } from "./format";
import { Attempt, Condition, Job, JobDetail, PodView, ProgressSample } from "./types";
import { LogView } from "./logs";
import { followWorkloads, workloadFacts } from "./queues";

// detailInterval is the least time between two fetches of the pods and
// events, which change with the job and are fetched when it does.
const detailInterval = 2000;

export function jobPage(root: HTMLElement, namespace: string, resource: string, name: string): () => void {
  const path = jobPath(namespace, resource, name);
  const header = h("div", { class: "job-header" });
  const result = h("div", { class: "result", id: "action-result", role: "status" });
  const conditions = h("ol", { class: "timeline", id: "conditions" });
  const queue = h("div", { id: "queue" }, h("p", { class: "empty" }, "Loading…"));
  const replicas = h("div", { id: "replicas" });
  const chartsBox = h("div", { class: "charts", id: "charts" });
  const checkpoints = h("div", { id: "checkpoints" });
  const accounting = h("div", { id: "accounting" });
  const attempts = h("div", { id: "attempts" });
  const events = h("div", { id: "events" });
  const logsBox = h("div", { id: "logs" });
  const yaml = h("pre", { class: "yaml", id: "yaml" });
  const charts = new MetricCharts(chartsBox);
  const logs = new LogView(logsBox, path);

  replace(
    root,
    h("p", {}, h("a", { href: "#/" }, "← all jobs")),
    header,
    result,
    h("section", {}, h("h2", {}, "Queue"), queue),
    h("section", {}, h("h2", {}, "Conditions"), conditions),
    h("section", {}, h("h2", {}, "Replicas"), replicas),
    h("section", {}, h("h2", {}, "Metrics"), chartsBox),
    h("section", { class: "two" }, h("div", {}, h("h2", {}, "Checkpoints"), checkpoints), h("div", {}, h("h2", {}, "Accounting"), accounting)),
    h("section", {}, h("h2", {}, "Attempts"), attempts),
    h("section", {}, h("h2", {}, "Events"), events),
    h("section", {}, h("h2", {}, "Logs"), logsBox),
    h("section", {}, h("h2", {}, "Spec"), yaml),
  );

  let job: Job | undefined;
  let pods: PodView[] = [];
  let lastDetail = 0;
  let detailTimer: number | undefined;
  // The whole run's metrics: the progresshistory subresource's, read with
  // the first detail, then grown by what status.progress.history brings.
  let history: ProgressSample[] = [];
  let historyRead = false;
  // Set once the page is left: a detail fetched after that must not start
  // following a log, a stream nothing would close, which counts against the
  // session's streams until the container ends.
  let left = false;

  async function fetchDetail(): Promise<void> {
    lastDetail = Date.now();
    try {
      const detail = await request<JobDetail>("GET", historyRead ? path : `${path}?history=true`);
      if (left) return;
      if (!historyRead) {
        historyRead = true;
        history = mergeHistory(detail.history?.samples ?? [], history);
        if (job) charts.update((history = mergeHistory(history, job.status.progress?.history ?? [])));
      }
      pods = detail.pods;
      yaml.textContent = detail.yaml;
      renderEvents(events, detail.events, detail.eventsRefused);
      logs.setPods(pods, detail.podsRefused);
      if (!job) show(detail.job);
      else renderReplicas(replicas, job, pods, detail.podsRefused);
    } catch (e) {
      replace(header, h("h1", {}, name), h("p", { class: "refused" }, e instanceof Error ? e.message : String(e)));
    }
  }

  // Pods and events follow the job: fetched when it changes, at most once
  // per detailInterval.
  function scheduleDetail(): void {
    if (detailTimer !== undefined) return;
    const wait = Math.max(0, lastDetail + detailInterval - Date.now());
    detailTimer = window.setTimeout(() => {
      detailTimer = undefined;
      void fetchDetail();
    }, wait);
  }

  function show(next: Job): void {
    job = next;
    renderHeader(header, job, resource, result);
    renderConditions(conditions, job.status.conditions);
    renderReplicas(replicas, job, pods);
    history = mergeHistory(history, job.status.progress?.history ?? []);
    charts.update(history);
    renderCheckpoints(checkpoints, job);
    renderAccounting(accounting, job);
    renderAttempts(attempts, job);
  }

  void fetchDetail();
  const source = follow(`${path}/watch`, {
    upsert: (next: Job) => {
      show(next);
      scheduleDetail();
    },
    delete: () => {
      replace(header, h("h1", {}, name), h("p", { class: "refused" }, "This job was deleted."));
    },
    refused: (body: { status: Status }) => {
      result.className = "result refused";
      replace(result, describeStatus(body.status));
    },
  });
  // The job's Kueue Workload: its position and Kueue's reason while it waits.
  const stopWorkloads = followWorkloads((byJob) => workloadFacts(queue, byJob.get(`${namespace}/${resource}/${name}`)));
  return () => {
    left = true;
    stopWorkloads();
    source.close();
    logs.close();
    charts.destroy();
    window.clearTimeout(detailTimer);
  };
}

function renderHeader(el: HTMLElement, job: Job, resource: string, result: HTMLElement): void {
  const phase = job.status.phase || "Pending";
  const finished = phase === "Succeeded" || phase === "Failed";
  // The header is drawn anew at every change of the job: a count being
  // typed into the scale box, or the box's focus, must survive it.
  const typing = el.querySelector<HTMLInputElement>(".scale-replicas");
  const typed = typing && typing.value !== typing.defaultValue ? typing.value : undefined;
  const focused = typing !== null && document.activeElement === typing;
  replace(
    el,
    h("h1", {}, `${job.metadata.namespace}/${job.metadata.name}`),
    jobFacts(job),
    buttons(
      {
        namespace: job.metadata.namespace,
        resource,
        name: job.metadata.name,
        paused: job.spec.runMode?.pause?.enabled,
        debugging: job.spec.runMode?.debug?.enabled,
        finished,
        elastic: elasticOf(job),
      },
      result,
    ),
  );
  const box = el.querySelector<HTMLInputElement>(".scale-replicas");
  if (box && typed !== undefined) box.value = typed;
  if (box && focused) box.focus();
}

// elasticOf is an elastic job's bounds and target, as the API defaults
// them (expected: the most).
function elasticOf(job: Job): { min: number; max: number; expected: number } | undefined {
  const e = job.spec.elastic;
  if (!e?.enabled || e.maxReplicas === undefined) return undefined;
  const min = e.minReplicas ?? 1;
  return { min, max: e.maxReplicas, expected: e.expectedReplicas ?? e.maxReplicas };
}

// jobFacts are the job's kind, phase, times and progress. deleted, for the
// record of a deleted job, is when it was deleted: the job ran until then at
// the latest, and will never finish.
export function jobFacts(job: Job, deleted?: string): HTMLElement {
  const s = job.status;
  const phase = s.phase || "Pending";
  const p = s.progress;
  const finished = phase === "Succeeded" || phase === "Failed";
  const end = s.completionTime ? Date.parse(s.completionTime) : deleted ? Date.parse(deleted) : Date.now();
  return h(
    "dl",
    { class: "facts" },
    fact("Kind", job.kind),
    fact("Phase", h("span", { class: `phase phase-${phase}`, id: "job-phase" }, phase)),
    deleted ? fact("Created", timestamp(job.metadata.creationTimestamp)) : fact("Age", age(job.metadata.creationTimestamp)),
    s.startTime && fact(deleted ? "Ran" : "Running for", duration((end - Date.parse(s.startTime)) / 1000)),
    fact("Restarts", s.backoffCount ?? 0),
    p?.percent !== undefined && fact("Progress", h("span", {}, h("progress", { max: 100, value: p.percent }), ` ${p.percent}%`)),
    p?.step !== undefined && fact("Step", `${p.step}${p.totalSteps ? ` of ${p.totalSteps}` : ""}`),
    p?.estimatedFinishTime && !finished && !deleted && fact("ETA", until(p.estimatedFinishTime)),
    p?.metrics?.length && fact("Metrics", p.metrics.map((m) => `${m.name}=${m.value}`).join("  ")),
    p?.message && fact("Message", p.message),
  );
}

function fact(term: string, value: Node | string | number): HTMLElement[] {
  return [h("dt", {}, term), h("dd", {}, value)];
}

// renderConditions draws conditions (a job's, a search's) as a timeline,
// oldest first.
export function renderConditions(el: HTMLElement, list: Condition[] | undefined): void {
  const conditions = [...(list ?? [])].sort((a, b) => (a.lastTransitionTime ?? "").localeCompare(b.lastTransitionTime ?? ""));
  if (conditions.length === 0) {
    replace(el, h("li", { class: "empty" }, "No conditions yet."));
    return;
  }
  replace(
    el,
    conditions.map((c) =>
      h(
        "li",
        { class: `condition status-${c.status}`, "data-condition": c.type },
        h("time", { datetime: c.lastTransitionTime ?? "" }, timestamp(c.lastTransitionTime)),
        h("strong", {}, ` ${c.type}=${c.status}`),
        c.reason ? ` ${c.reason}` : "",
        c.message ? h("div", { class: "message" }, c.message) : "",
      ),
    ),
  );
}

// renderReplicas joins the job's own account of each replica
// (status.tasks) with the pods that exist now.
function renderReplicas(el: HTMLElement, job: Job, pods: PodView[], refused?: Status): void {
  const podsByName = new Map(pods.map((p) => [p.name, p]));
  const rows: HTMLElement[] = [];
  for (const task of job.status.tasks ?? []) {
    for (const r of task.replicaStatus ?? []) {
      const pod = podsByName.get(r.name);
      podsByName.delete(r.name);
      const training = r.containers?.[0];
      const podContainer = pod?.containers[0];
      const exit = training?.exitCode ?? training?.lastTermination?.exitCode ?? podContainer?.exitCode;
      rows.push(
        h(
          "tr",
          { "data-replica": r.name },
          h("td", {}, task.type),
          h("td", {}, r.name),
          h("td", {}, r.phase ?? ""),
          h("td", {}, pod?.node ?? ""),
          h("td", {}, training?.state ?? podContainer?.state ?? ""),
          h("td", {}, exit ?? ""),
          h("td", {}, [r.reason, training?.reason ?? training?.lastTermination?.reason].filter(Boolean).join(", ") + (r.restartAt ? ` (restarts in ${until(r.restartAt)})` : "")),
          h("td", {}, r.restartCount ?? 0),
        ),
      );
    }
  }
  // Pods the status does not name yet (just created) still show.
  for (const pod of podsByName.values()) {
    const c = pod.containers[0];
    rows.push(h("tr", { "data-replica": pod.name }, h("td", {}, pod.replicaType), h("td", {}, pod.name), h("td", {}, pod.phase), h("td", {}, pod.node ?? ""), h("td", {}, c?.state ?? ""), h("td", {}, c?.exitCode ?? ""), h("td", {}, c?.reason ?? ""), h("td", {}, c?.restarts ?? 0)));
  }
  replace(
    el,
    refused && h("p", { class: "refused" }, `Pods: ${describeStatus(refused)}`),
    h("table", {}, h("thead", {}, h("tr", {}, ["Type", "Pod", "Phase", "Node", "State", "Exit code", "Reason", "Restarts"].map((c) => h("th", {}, c)))), h("tbody", {}, rows)),
  );
}

// mergeHistory is known followed by the samples of recent it does not have
// yet: those reported after its last. Report times are RFC 3339 with
// microseconds, in UTC, so their strings sort as the times do.
export function mergeHistory(known: ProgressSample[], recent: ProgressSample[]): ProgressSample[] {
  const last = known.length > 0 ? known[known.length - 1].reportTime : "";
  const newer = recent.filter((s) => s.reportTime > last);
  return newer.length === 0 ? known : known.concat(newer);
}

export function renderCheckpoints(el: HTMLElement, job: Job): void {
  const c = job.status.checkpoint;
  if (!c?.latest && !c?.history?.length) {
    replace(el, h("p", { class: "empty" }, "No checkpoint reported."));
    return;
  }
  const records = c.history?.length ? c.history : c.latest ? [c.latest] : [];
  replace(
    el,
    c.requestTime && h("p", {}, `Checkpoint requested ${age(c.requestTime)} ago${c.requestReason ? ` (${c.requestReason})` : ""}`),
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, ["Path", "Step", "Epoch", "Reported"].map((t) => h("th", {}, t)))),
      h("tbody", {}, [...records].reverse().map((r) => h("tr", { "data-step": r.step ?? "" }, h("td", {}, r.path), h("td", {}, r.step ?? ""), h("td", {}, r.epoch ?? ""), h("td", {}, timestamp(r.reportTime))))),
    ),
  );
}

// deleted, for the record of a deleted job, is when its last state ended.
export function renderAccounting(el: HTMLElement, job: Job, deleted?: string): void {
  const a = job.status.accounting;
  if (!a) {
    replace(el, h("p", { class: "empty" }, "Nothing accounted yet."));
    return;
  }
  replace(
    el,
    h(
      "dl",
      { class: "facts" },
      fact("State", `${a.state ?? ""}${a.stateSince ? ` for ${age(a.stateSince, deleted ? Date.parse(deleted) : undefined)}` : ""}`),
      fact("Queued", duration(a.queuedSeconds ?? 0)),
      fact("Starting", duration(a.startingSeconds ?? 0)),
      fact("Running", duration(a.runningSeconds ?? 0)),
      fact("Paused", duration(a.pausedSeconds ?? 0)),
      fact("Interruptions", a.interruptions ?? 0),
      fact("Lost work", `${a.lostSteps ?? 0} steps, ${duration(a.lostReplicaSeconds ?? 0)} replica-time`),
    ),
    a.recent?.length
      ? h(
          "table",
          {},
          h("thead", {}, h("tr", {}, ["When", "Reason", "Replicas", "Lost time", "Lost steps"].map((t) => h("th", {}, t)))),
          h("tbody", {}, a.recent.map((i) => h("tr", {}, h("td", {}, timestamp(i.time)), h("td", {}, i.reason), h("td", {}, i.replicas), h("td", {}, duration(i.lostSeconds)), h("td", {}, i.lostSteps ?? "")))),
        )
      : "",
  );
}

// renderAttempts shows every start of the job's pods that the status keeps,
// newest first, with the replicas that failed in it and their last log
// lines; and the nodes the job leaves out of its next pods. deleted, for the
// record of a deleted job, ends the attempts that had not ended.
export function renderAttempts(el: HTMLElement, job: Job, deleted?: string): void {
  const s = job.status;
  const list = s.attempts ?? [];
  const suspects = s.suspectNodes ?? [];
  const kept = s.attemptCount && s.attemptCount > list.length ? ` (the last ${list.length} of ${s.attemptCount})` : "";
  replace(
    el,
    list.length === 0
      ? h("p", { class: "empty" }, "No pods started yet.")
      : h(
          "table",
          {},
          h("caption", {}, `${s.attemptCount ?? list.length} attempt(s)${kept}`),
          h("thead", {}, h("tr", {}, ["#", "Started", "Ran", "Ended", "Resumed from", "Last checkpoint", "Steps", "Failed replicas"].map((t) => h("th", {}, t)))),
          h("tbody", {}, [...list].reverse().map((a) => attemptRow(a, deleted))),
        ),
    suspects.length > 0 &&
      h(
        "div",
        { id: "suspect-nodes" },
        h("h3", {}, "Nodes left out of the next pods"),
        h("ul", {}, suspects.map((n) => h("li", { "data-node": n.name }, `${n.name}: ${n.reason}${n.message ? ` (${n.message})` : ""}, ${age(n.time)} ago`))),
      ),
  );
}

function attemptRow(a: Attempt, deleted?: string): HTMLElement {
  const end = Date.parse(a.endTime ?? deleted ?? "") || Date.now();
  const checkpoint = (c?: { path: string; step?: number }) => (c ? (c.step !== undefined ? `step ${c.step}` : c.path) : "");
  const failed = a.failedReplicas ?? [];
  return h(
    "tr",
    { "data-attempt": a.number, "data-reason": a.reason ?? "", "data-resumed-from": a.resumedFrom?.step ?? "" },
    h("td", {}, a.number),
    h("td", { title: a.startTime }, timestamp(a.startTime)),
    h("td", {}, duration((end - Date.parse(a.startTime)) / 1000)),
    h("td", { title: a.message ?? "" }, a.endTime ? a.reason ?? "" : deleted ? "deleted" : "running"),
    h("td", { title: a.resumedFrom?.path ?? "" }, checkpoint(a.resumedFrom)),
    h("td", { title: a.lastCheckpoint?.path ?? "" }, checkpoint(a.lastCheckpoint)),
    h("td", {}, a.steps ?? ""),
    h(
      "td",
      {},
      failed.map((f) =>
        h(
          "details",
          { "data-failed": f.name },
          h("summary", {}, `${f.name}${f.node ? ` on ${f.node}` : ""}: ${f.reason ?? ""}${f.exitCode !== undefined ? ` (exit ${f.exitCode})` : ""}`),
          h("pre", { class: "log-tail" }, f.logs || f.logError || "no log lines"),
        ),
      ),
      (a.failedReplicaCount ?? 0) > failed.length && ` and ${(a.failedReplicaCount ?? 0) - failed.length} more`,
    ),
  );
}

export function renderEvents(el: HTMLElement, events: JobDetail["events"], refused?: Status): void {
  if (refused) {
    replace(el, h("p", { class: "refused" }, `Events: ${describeStatus(refused)}`));
    return;
  }
  if (events.length === 0) {
    replace(el, h("p", { class: "empty" }, "No events."));
    return;
  }
  replace(
    el,
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, ["Last seen", "Type", "Reason", "Count", "Message"].map((t) => h("th", {}, t)))),
      h("tbody", {}, [...events].reverse().map((e) => h("tr", { class: `event-${e.type}` }, h("td", { title: e.last }, age(e.last)), h("td", {}, e.type), h("td", {}, e.reason), h("td", {}, e.count), h("td", {}, e.message)))),
    ),
  );
}
