// The jobs list: every job of every kind the user may list, updated from the
// server's watch stream as it changes, filtered on the page.

import { follow, describeStatus, jobKinds, Status } from "./api";
import { buttons } from "./actions";
import { JobSelection } from "./compare";
import { h, replace } from "./dom";
import { age, duration, until } from "./format";
import { JobSummary } from "./types";
import { followWorkloads, positionText, QueuedWorkload } from "./queues";

// The phases of the API contract (status.phase).
const phases = ["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"];

interface Filters {
  namespace: string;
  kind: string;
  phase: string;
  queue: string;
  label: string;
}

export function jobsPage(root: HTMLElement): () => void {
  const jobs = new Map<string, JobSummary>();
  const filters: Filters = { namespace: "", kind: "", phase: "", queue: "", label: "" };
  const notices = h("div", { class: "notices", id: "notices" });
  const result = h("div", { class: "result", id: "action-result", role: "status" });
  const rows = h("tbody");
  const empty = h("p", { class: "empty", id: "list-state" }, "Loading…");
  // The jobs ticked for a comparison, kept across the redraws.
  const selection = new JobSelection();
  let synced = false;
  let source: EventSource | undefined;

  const input = (key: keyof Filters, placeholder: string, restart = false) =>
    h("input", {
      type: "search",
      id: `filter-${key}`,
      placeholder,
      "aria-label": placeholder,
      onchange: (e: Event) => {
        filters[key] = (e.target as HTMLInputElement).value.trim();
        if (restart) connect();
        else render();
      },
    });
  const select = (key: keyof Filters, label: string, options: string[]) =>
    h(
      "select",
      {
        id: `filter-${key}`,
        "aria-label": label,
        onchange: (e: Event) => {
          filters[key] = (e.target as HTMLSelectElement).value;
          render();
        },
      },
      h("option", { value: "" }, `${label}: all`),
      options.map((o) => h("option", { value: o }, o)),
    );

  replace(
    root,
    h("h1", {}, "Training jobs"),
    h(
      "div",
      { class: "filters" },
      input("namespace", "namespace (all)", true),
      select("kind", "kind", jobKinds().map((k) => k.kind)),
      select("phase", "phase", phases),
      input("queue", "queue"),
      input("label", "labels: key=value,key"),
      selection.button,
    ),
    notices,
    result,
    h(
      "table",
      { class: "jobs", id: "jobs" },
      h(
        "thead",
        {},
        h("tr", {}, ["", "Name", "Namespace", "Kind", "Phase", "Progress", "ETA", "Queue", "Position", "Age", "Restarts", "Lost work", ""].map((c) => h("th", {}, c))),
      ),
      rows,
    ),
    empty,
  );

  function connect(): void {
    source?.close();
    jobs.clear();
    synced = false;
    replace(notices);
    render();
    const query = filters.namespace ? `?namespace=${encodeURIComponent(filters.namespace)}` : "";
    source = follow(`/api/jobs/watch${query}`, {
      upsert: (job: JobSummary) => {
        jobs.set(key(job), job);
        schedule();
      },
      delete: (job: JobSummary) => {
        jobs.delete(key(job));
        schedule();
      },
      synced: () => {
        synced = true;
        schedule();
      },
      refused: (body: { status: Status }) => {
        notices.append(h("p", { class: "refused" }, describeStatus(body.status)));
      },
    }, () => {
      // EventSource reconnects by itself, and the server lists again:
      // start from an empty list so that no deleted job lingers.
      jobs.clear();
      synced = false;
      replace(notices);
    });
  }

  // Many events arrive at once (the first list); draw once per frame.
  let pending = false;
  function schedule(): void {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      render();
    });
  }

  function render(): void {
    const now = Date.now();
    const shown = [...jobs.values()].filter((j) => matches(j, filters)).sort(compareJobs);
    if (synced) selection.keep((k) => jobs.has(k));
    replace(rows, shown.map((j) => row(j, now, result, selection, workloads.get(key(j)))));
    empty.textContent = !synced ? "Loading…" : shown.length === 0 ? (jobs.size ? "No job matches the filters." : "No training jobs.") : "";
  }

  // Each job's Kueue Workload, for the Position column.
  let workloads = new Map<string, QueuedWorkload>();
  const stopWorkloads = followWorkloads((byJob) => {
    workloads = byJob;
    schedule();
  });
  connect();
  // Ages and ETAs move with the clock.
  const clock = window.setInterval(render, 5000);
  return () => {
    stopWorkloads();
    source?.close();
    window.clearInterval(clock);
  };
}

function key(j: JobSummary): string {
  return `${j.namespace}/${j.resource}/${j.name}`;
}

function compareJobs(a: JobSummary, b: JobSummary): number {
  return b.created.localeCompare(a.created) || key(a).localeCompare(key(b));
}

function matches(j: JobSummary, f: Filters): boolean {
  if (f.kind && j.kind !== f.kind) return false;
  if (f.phase && (j.phase ?? "Pending") !== f.phase) return false;
  if (f.queue && !(j.queue ?? "").includes(f.queue)) return false;
  for (const term of f.label.split(",").map((t) => t.trim()).filter(Boolean)) {
    const [k, v] = term.split("=", 2).map((s) => s.trim());
    const labels = j.labels ?? {};
    if (!(k in labels) || (v !== undefined && labels[k] !== v)) return false;
  }
  return true;
}

function row(j: JobSummary, now: number, result: HTMLElement, selection: JobSelection, workload?: QueuedWorkload): HTMLElement {
  const href = `#/job/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.resource)}/${encodeURIComponent(j.name)}`;
  const phase = j.phase || "Pending";
  const progress =
    j.percent !== undefined
      ? h("span", { class: "progress" }, h("progress", { max: 100, value: j.percent }), ` ${j.percent}%`, j.step !== undefined ? ` step ${j.step}${j.totalSteps ? `/${j.totalSteps}` : ""}` : "")
      : "";
  const lost = [
    j.lostSteps ? `${j.lostSteps} steps` : "",
    j.lostReplicaSeconds ? `${duration(j.lostReplicaSeconds)} replica-time` : "",
    j.interruptions ? `${j.interruptions} interruption${j.interruptions > 1 ? "s" : ""}` : "",
  ].filter(Boolean).join(", ");
  return h(
    "tr",
    { "data-job": key(j), "data-phase": phase },
    selection.cell({ namespace: j.namespace, kind: j.resource, name: j.name }),
    h("td", {}, h("a", { href }, j.name)),
    h("td", {}, j.namespace),
    h("td", {}, j.kind),
    h("td", { class: `phase phase-${phase}` }, phase + (j.paused && phase !== "Paused" ? " (pausing)" : "")),
    h("td", {}, progress),
    h("td", {}, until(j.estimatedFinishTime, now)),
    h("td", {}, j.queue ?? ""),
    h("td", { class: "position", title: workload?.reason ?? "" }, positionText(workload)),
    h("td", { title: j.created }, age(j.created, now)),
    h("td", {}, j.restarts),
    h("td", {}, lost),
    h("td", {}, buttons({ ...j, finished: phase === "Succeeded" || phase === "Failed" }, result)),
  );
}
