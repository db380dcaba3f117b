// The History: the records the API server keeps of deleted jobs
// (TrainingJobRecords). #/history lists them, the jobs deleted last first,
// with the jobs list's filters; #/history/NS/NAME opens one as a read-only
// job page, drawn by the job page's own functions: no actions on the job,
// no watch, pods or logs, for the job is gone. Records only come and go:
// the list is read again every few seconds while it is shown.

import { jobKinds, request } from "./api";
import { run } from "./actions";
import { MetricCharts } from "./charts";
import { h, replace } from "./dom";
import { age, timestamp } from "./format";
import { jobFacts, renderAccounting, renderAttempts, renderCheckpoints, renderConditions, renderEvents } from "./job";
import { errorMessage, NamespacedList, pollList } from "./polledlist";
import { EventView, Job, RecordDetail, RecordSummary, TrainingJobRecord } from "./types";

// How often the list is read again. Records come only as jobs are deleted,
// and each read has the API server go through every record: less often
// than the searches.
const listInterval = 30_000;
// The rows drawn at once: a namespace keeps up to 1,000 records by default,
// a cluster many times that, and a table of 10,000 rows takes seconds to lay
// out. The filters apply to every record; the pager moves through them.
const pageSize = 100;

// The phases of the API contract (status.phase).
const phases = ["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"];

interface Filters {
  kind: string;
  phase: string;
  name: string;
}

export function recordHref(namespace: string, name: string): string {
  return `#/history/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

function recordPath(namespace: string, name: string): string {
  return `/api/records/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

// historyPage lists the records of a namespace, or of all of them.
export function historyPage(root: HTMLElement): () => void {
  let namespace = "";
  const filters: Filters = { kind: "", phase: "", name: "" };
  let list: NamespacedList<RecordSummary> | undefined;
  let first = 0;
  const notices = h("div", { class: "notices", id: "history-notices" });
  const rows = h("tbody");
  const empty = h("p", { class: "empty", id: "history-state" }, "Loading…");
  const count = h("span", { id: "history-count" });
  const newer = h("button", { type: "button", id: "history-newer", onclick: () => turn(-pageSize) }, "← Newer");
  const older = h("button", { type: "button", id: "history-older", onclick: () => turn(pageSize) }, "Older →");

  const input = (id: string, placeholder: string, onchange: (value: string) => void) =>
    h("input", {
      type: "search",
      id,
      placeholder,
      "aria-label": placeholder,
      onchange: (e: Event) => onchange((e.target as HTMLInputElement).value.trim()),
    });
  const select = (key: "kind" | "phase", options: string[]) =>
    h(
      "select",
      {
        id: `history-filter-${key}`,
        "aria-label": key,
        onchange: (e: Event) => {
          filters[key] = (e.target as HTMLSelectElement).value;
          first = 0;
          render();
        },
      },
      h("option", { value: "" }, `${key}: all`),
      options.map((o) => h("option", { value: o }, o)),
    );

  replace(
    root,
    h("h1", {}, "History: deleted jobs"),
    h(
      "div",
      { class: "filters" },
      input("history-filter-namespace", "namespace (all)", (value) => {
        namespace = value;
        list = undefined;
        first = 0;
        render();
        records.reload();
      }),
      select("kind", jobKinds().map((k) => k.kind)),
      select("phase", phases),
      input("history-filter-name", "job name", (value) => {
        filters.name = value;
        first = 0;
        render();
      }),
    ),
    notices,
    h("div", { class: "pager" }, newer, older, count),
    h(
      "table",
      { class: "records", id: "history" },
      h("thead", {}, h("tr", {}, ["Job", "Namespace", "Kind", "Phase", "Ran", "Step", "Deleted", "Left out"].map((c) => h("th", {}, c)))),
      rows,
    ),
    empty,
  );

  function turn(by: number): void {
    first = Math.max(0, first + by);
    render();
  }

  function render(): void {
    const now = Date.now();
    const items = list?.items ?? [];
    const shown = items.filter((r) => matches(r, filters));
    if (first >= shown.length) first = Math.max(0, Math.floor((shown.length - 1) / pageSize) * pageSize);
    const page = shown.slice(first, first + pageSize);
    replace(rows, page.map((r) => recordRow(r, now)));
    count.setAttribute("data-total", String(shown.length));
    count.textContent = shown.length ? `Records ${first + 1}–${first + page.length} of ${shown.length}` : "";
    newer.disabled = first === 0;
    older.disabled = first + pageSize >= shown.length;
    empty.textContent = !list ? (notices.childElementCount ? "" : "Loading…") : shown.length ? "" : items.length ? "No record matches the filters." : "No records of deleted jobs.";
  }

  const records = pollList<RecordSummary>({
    path: "/api/records",
    namespace: () => namespace,
    interval: listInterval,
    what: "records",
    notices,
    truncatedId: "history-truncated",
    loaded: (got) => {
      if (got) list = got;
      render();
    },
  });
  return records.stop;
}

function matches(r: RecordSummary, f: Filters): boolean {
  if (f.kind && r.jobKind !== f.kind) return false;
  if (f.phase && (r.phase || "Pending") !== f.phase) return false;
  if (f.name && !r.jobName.includes(f.name)) return false;
  return true;
}

function recordRow(r: RecordSummary, now: number): HTMLElement {
  const phase = r.phase || "Pending";
  return h(
    "tr",
    { "data-record": `${r.namespace}/${r.name}`, "data-job": `${r.namespace}/${r.jobName}`, "data-phase": phase },
    h("td", {}, h("a", { href: recordHref(r.namespace, r.name), title: r.name }, r.jobName)),
    h("td", {}, r.namespace),
    h("td", {}, r.jobKind),
    h("td", { class: `phase phase-${phase}` }, phase),
    h("td", {}, r.ran ?? ""),
    h("td", {}, r.step ?? ""),
    h("td", { title: timestamp(r.deleted) }, `${age(r.deleted, now)} ago`),
    h("td", {}, (r.leftOut ?? []).join(", ")),
  );
}

// recordPage shows one record as the job's page, read-only.
export function recordPage(root: HTMLElement, namespace: string, name: string): () => void {
  const path = recordPath(namespace, name);
  const banner = h("div", { class: "record-banner", id: "record-banner", role: "note" });
  const header = h("div", { class: "job-header" }, h("h1", {}, name), h("p", { class: "empty" }, "Loading…"));
  const result = h("div", { class: "result", id: "action-result", role: "status" });
  const conditions = h("ol", { class: "timeline", id: "conditions" });
  const chartsBox = h("div", { class: "charts", id: "charts" });
  const checkpoints = h("div", { id: "checkpoints" });
  const accounting = h("div", { id: "accounting" });
  const attempts = h("div", { id: "attempts" });
  const events = h("div", { id: "events" });
  const yaml = h("pre", { class: "yaml", id: "yaml" });
  const charts = new MetricCharts(chartsBox);

  replace(
    root,
    h("p", {}, h("a", { href: "#/history" }, "← History")),
    banner,
    header,
    result,
    h("section", {}, h("h2", {}, "Conditions"), conditions),
    h("section", {}, h("h2", {}, "Metrics"), chartsBox),
    h("section", { class: "two" }, h("div", {}, h("h2", {}, "Checkpoints"), checkpoints), h("div", {}, h("h2", {}, "Accounting"), accounting)),
    h("section", {}, h("h2", {}, "Attempts"), attempts),
    h("section", {}, h("h2", {}, "Events"), events),
    h("section", {}, h("h2", {}, "Spec"), yaml),
  );

  let left = false;
  void (async () => {
    let detail: RecordDetail;
    try {
      detail = await request<RecordDetail>("GET", path);
    } catch (e) {
      if (!left) replace(header, h("h1", {}, name), h("p", { class: "refused" }, errorMessage(e)));
      return;
    }
    if (left) return;
    const record = detail.record;
    const job = recordedJob(record);
    const deleted = record.deletionTime;
    renderBanner(banner, record);
    replace(
      header,
      h("h1", {}, `${record.metadata.namespace}/${record.jobName}`),
      jobFacts(job, deleted),
      h(
        "span",
        { class: "actions" },
        h("button", {
          type: "button",
          class: "danger",
          "data-action": "delete-record",
          onclick: () => {
            if (!window.confirm(`Delete the record of ${record.metadata.namespace}/${record.jobName}? The job is gone already.`)) return;
            void run(result, `delete the record ${record.metadata.name}`, () => request("DELETE", path)).then((ok) => {
              if (ok && !left) location.hash = "#/history";
            });
          },
        }, "Delete record"),
      ),
    );
    renderConditions(conditions, job.status.conditions);
    charts.update(record.progress ?? []);
    renderCheckpoints(checkpoints, job);
    renderAccounting(accounting, job, deleted);
    renderAttempts(attempts, job, deleted);
    // The record keeps the events newest first; the job page's table is
    // given them oldest first.
    const recorded: EventView[] = (record.events ?? [])
      .map((e) => ({ type: e.type, reason: e.reason, message: e.message ?? "", count: e.count ?? 1, last: e.lastTime ?? e.firstTime ?? "" }))
      .reverse();
    renderEvents(events, recorded);
    yaml.textContent = detail.yaml || "The record leaves out the job's spec.";
  })();
  return () => {
    left = true;
    charts.destroy();
  };
}

// recordedJob is the job as the record keeps it; a record without it (none
// the server writes) still has the outline of its status.
function recordedJob(record: TrainingJobRecord): Job {
  const job = record.job ?? ({} as Partial<Job>);
  return {
    apiVersion: job.apiVersion ?? "batch.tensorstack.dev/v1beta1",
    kind: job.kind ?? record.jobKind,
    metadata: job.metadata ?? {
      name: record.jobName,
      namespace: record.metadata.namespace,
      uid: record.jobUID,
      creationTimestamp: record.jobCreationTime,
    },
    spec: job.spec ?? {},
    status: job.status ?? { phase: record.phase, startTime: record.startTime, completionTime: record.completionTime },
  };
}

// renderBanner says that the page is a record, of a job deleted when, and
// what the record does not keep.
function renderBanner(el: HTMLElement, record: TrainingJobRecord): void {
  const leftOut = record.leftOut ?? [];
  const thinned = record.thinnedSamples ?? 0;
  replace(
    el,
    h(
      "p",
      {},
      h("strong", {}, "The record of a deleted job. "),
      `${record.jobKind} ${record.metadata.namespace}/${record.jobName} was deleted `,
      h("time", { datetime: record.deletionTime, id: "record-deleted" }, `${age(record.deletionTime)} ago (${timestamp(record.deletionTime)})`),
      `; this page shows it as it was then, and cannot change it.`,
    ),
    h(
      "p",
      { id: "record-left-out", "data-left-out": leftOut.join(",") },
      leftOut.length
        ? `To stay within its size, the record leaves out: ${leftOut.map(describeLeftOut).join("; ")}.`
        : "The record keeps the whole job, its progress history and its last events.",
      thinned > 0 ? ` ${thinned} older progress sample${thinned === 1 ? "" : "s"} were thinned out of the charts.` : "",
    ),
  );
}

function describeLeftOut(part: string): string {
  switch (part) {
    case "progress":
      return "part of the progress history (thinned further)";
    case "events":
      return "the events";
    case "job.status":
      return "the job's status but its phase, conditions, attempts and accounting";
    case "job.spec":
      return "the job's spec";
    default:
      return part;
  }
}
