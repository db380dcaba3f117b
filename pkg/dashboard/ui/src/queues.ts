// The Queues page: every Kueue ClusterQueue and LocalQueue the user may
// read, each ClusterQueue's quota and usage per flavor and resource, and its
// pending Workloads in the order Kueue will consider them, from the server's
// stream (GET /api/queues/watch), which follows Kueue's objects with watches.
// Also the Workload of each job, with its position, for the job list and a
// job's page (the same stream, ?view=workloads).

import { describeStatus, follow, jobKinds, Status } from "./api";
import { h, replace } from "./dom";
import { age } from "./format";

export interface Quota {
  flavor: string;
  resource: string;
  nominal: string;
  borrowingLimit?: string;
  lendingLimit?: string;
  usage: string;
  borrowed: string;
  reserved: string;
}

// QueuedWorkload is a Workload as the server's view words it; positions
// count from 1, the next to be considered.
export interface QueuedWorkload {
  namespace: string;
  name: string;
  localQueue?: string;
  clusterQueue?: string;
  priority: number;
  created: string;
  state: string;
  positionInClusterQueue?: number;
  positionInLocalQueue?: number;
  reason?: string;
  message?: string;
  ownerKind?: string;
  ownerAPIVersion?: string;
  ownerName?: string;
}

export interface ClusterQueueView {
  name: string;
  cohort?: string;
  queueingStrategy?: string;
  active: boolean;
  inactive?: string;
  admitted: number;
  reserving: number;
  pending: number;
  quotas: Quota[];
  pendingWorkloads: QueuedWorkload[];
  // ordering: "kueue" (the visibility API's order) or "view" (the server's
  // own, by priority then creation), with orderingNote saying why.
  ordering: string;
  orderingNote?: string;
}

export interface LocalQueueView {
  namespace: string;
  name: string;
  clusterQueue: string;
  admitted: number;
  reserving: number;
  pending: number;
}

interface QueuesSnapshot {
  clusterQueues?: ClusterQueueView[];
  localQueues?: LocalQueueView[];
  workloads?: QueuedWorkload[];
  namespace: string;
}

export function queuesPage(root: HTMLElement): () => void {
  const notices = h("div", { class: "notices", id: "queues-notices" });
  const state = h("p", { class: "empty", id: "queues-state" }, "Loading…");
  const clusterQueues = h("div", { id: "cluster-queues" });
  const localQueues = h("div", { id: "local-queues" });
  replace(
    root,
    h("h1", {}, "Queues"),
    notices,
    state,
    clusterQueues,
    h("h2", {}, "LocalQueues"),
    localQueues,
  );
  let latest: QueuesSnapshot | undefined;
  let frame = 0;
  const source = follow(
    "/api/queues/watch",
    {
      snapshot: (s: QueuesSnapshot) => {
        latest = s;
        // A burst of snapshots draws once per frame.
        if (!frame) frame = requestAnimationFrame(draw);
      },
      synced: () => {
        state.textContent = "";
      },
      refused: (body: { status: Status }) => {
        notices.append(h("p", { class: "refused" }, describeStatus(body.status)));
      },
    },
    () => {
      // EventSource reconnects, and the server says again what it refuses.
      replace(notices);
    },
  );

  function draw(): void {
    frame = 0;
    if (!latest) return;
    const now = Date.now();
    const cqs = latest.clusterQueues ?? [];
    replace(clusterQueues, cqs.length ? cqs.map((cq) => clusterQueueSection(cq, now)) : h("p", { class: "empty" }, "No ClusterQueues to show."));
    const lqs = latest.localQueues ?? [];
    replace(
      localQueues,
      lqs.length
        ? h(
            "table",
            { class: "local-queues", id: "local-queue-table" },
            h("thead", {}, h("tr", {}, ["Namespace", "Name", "ClusterQueue", "Admitted", "Reserving", "Pending"].map((c) => h("th", {}, c)))),
            h(
              "tbody",
              {},
              lqs.map((lq) =>
                h(
                  "tr",
                  { "data-local-queue": `${lq.namespace}/${lq.name}` },
                  h("td", {}, lq.namespace),
                  h("td", {}, lq.name),
                  h("td", {}, lq.clusterQueue),
                  h("td", {}, lq.admitted),
                  h("td", {}, lq.reserving),
                  h("td", {}, lq.pending),
                ),
              ),
            ),
          )
        : h("p", { class: "empty" }, latest.namespace ? `No LocalQueues in ${latest.namespace}.` : "No LocalQueues."),
    );
  }

  return () => {
    source.close();
    if (frame) cancelAnimationFrame(frame);
  };
}

function clusterQueueSection(cq: ClusterQueueView, now: number): HTMLElement {
  const facts = [
    cq.active ? "active" : `inactive${cq.inactive ? ` (${cq.inactive})` : ""}`,
    cq.cohort ? `cohort ${cq.cohort}` : "",
    cq.queueingStrategy ?? "",
  ].filter(Boolean);
  const order =
    cq.ordering === "kueue"
      ? `In Kueue's order, from its visibility API${cq.orderingNote ? `, ${cq.orderingNote}` : ""}.`
      : `Ordered by priority, then creation, as Kueue's FIFO strategies do${cq.orderingNote ? `: ${cq.orderingNote}` : "."}`;
  return h(
    "section",
    { class: "cluster-queue", "data-cluster-queue": cq.name },
    h("h2", {}, `ClusterQueue ${cq.name}`),
    h(
      "p",
      { class: "queue-facts" },
      facts.join(", "),
      " — ",
      h("span", { "data-count": "admitted" }, `${cq.admitted} admitted`),
      ", ",
      h("span", { "data-count": "reserving" }, `${cq.reserving} reserving`),
      ", ",
      h("span", { "data-count": "pending" }, `${cq.pending} pending`),
    ),
    h(
      "table",
      { class: "quotas" },
      h("thead", {}, h("tr", {}, ["Flavor", "Resource", "Nominal", "Usage", "Borrowed", "Reserved", "Borrowing limit", "Lending limit"].map((c) => h("th", {}, c)))),
      h(
        "tbody",
        {},
        cq.quotas.map((q) =>
          h(
            "tr",
            { "data-quota": `${q.flavor}/${q.resource}` },
            h("td", {}, q.flavor),
            h("td", {}, q.resource),
            h("td", {}, q.nominal),
            h("td", {}, q.usage),
            h("td", {}, q.borrowed),
            h("td", {}, q.reserved),
            h("td", {}, q.borrowingLimit ?? "—"),
            h("td", {}, q.lendingLimit ?? "—"),
          ),
        ),
      ),
    ),
    cq.pendingWorkloads.length === 0
      ? h("p", { class: "empty" }, "No pending Workloads.")
      : h(
          "table",
          { class: "pending" },
          h("caption", { class: "ordering", "data-ordering": cq.ordering }, `Pending Workloads. ${order}`),
          h("thead", {}, h("tr", {}, ["#", "Workload", "Job", "Namespace", "LocalQueue", "Priority", "Age", "Kueue's reason"].map((c) => h("th", {}, c)))),
          h("tbody", {}, cq.pendingWorkloads.map((w) => pendingRow(w, now))),
        ),
  );
}

function pendingRow(w: QueuedWorkload, now: number): HTMLElement {
  const href = jobHref(w);
  return h(
    "tr",
    { "data-workload": `${w.namespace}/${w.name}`, "data-position": w.positionInClusterQueue ?? "" },
    h("td", {}, w.positionInClusterQueue ?? "—"),
    h("td", {}, w.name),
    h("td", {}, href ? h("a", { href }, w.ownerName ?? "") : w.ownerName ? `${w.ownerKind}/${w.ownerName}` : ""),
    h("td", {}, w.namespace),
    h("td", {}, w.localQueue ?? ""),
    h("td", {}, w.priority),
    h("td", { title: w.created }, age(w.created, now)),
    h("td", { class: "message" }, reasonText(w)),
  );
}

// jobHref is the page of the training job a Workload is for, if it is one.
function jobHref(w: QueuedWorkload): string | undefined {
  const resource = resourceOf(w);
  if (!resource || !w.ownerName) return undefined;
  return `#/job/${encodeURIComponent(w.namespace)}/${encodeURIComponent(resource)}/${encodeURIComponent(w.ownerName)}`;
}

function resourceOf(w: QueuedWorkload): string | undefined {
  if (!w.ownerKind || !(w.ownerAPIVersion ?? "").startsWith("batch.tensorstack.dev/")) return undefined;
  return jobKinds().find((k) => k.kind === w.ownerKind)?.resource;
}

function reasonText(w: QueuedWorkload): string {
  return [w.reason, w.message].filter(Boolean).join(": ");
}

// positionText words where a job's Workload stands, for the list's column.
export function positionText(w: QueuedWorkload | undefined): string {
  if (!w) return "";
  if (w.state === "Pending") {
    return w.positionInClusterQueue ? `#${w.positionInClusterQueue} in ${w.clusterQueue}` : "pending";
  }
  return w.state === "QuotaReserved" ? "quota reserved" : w.state.toLowerCase();
}

// followWorkloads calls onChange with each job's Workload, keyed
// NAMESPACE/RESOURCE/NAME as the list keys its rows, whenever one changes.
// Without Kueue, or where the user may read no Workloads, it never calls.
export function followWorkloads(onChange: (byJob: Map<string, QueuedWorkload>) => void): () => void {
  const source = follow("/api/queues/watch?view=workloads", {
    snapshot: (s: QueuesSnapshot) => {
      const byJob = new Map<string, QueuedWorkload>();
      for (const w of s.workloads ?? []) {
        const resource = resourceOf(w);
        if (resource && w.ownerName) byJob.set(`${w.namespace}/${resource}/${w.ownerName}`, w);
      }
      onChange(byJob);
    },
  });
  return () => source.close();
}

// workloadFacts is a job's Workload as its page shows it: the queue, the
// position while it waits and Kueue's reason.
export function workloadFacts(el: HTMLElement, w: QueuedWorkload | undefined): void {
  if (!w) {
    replace(el, h("p", { class: "empty" }, "No Kueue Workload for this job (it names no queue, or Kueue is not installed)."));
    return;
  }
  const row = (term: string, value: string | number) => [h("dt", {}, term), h("dd", {}, value)];
  replace(
    el,
    h(
      "dl",
      { class: "facts", id: "workload-facts" },
      row("Workload", w.name),
      row("State", w.state),
      w.localQueue ? row("LocalQueue", w.localQueue) : [],
      w.clusterQueue ? row("ClusterQueue", w.clusterQueue) : [],
      w.state === "Pending" && w.positionInClusterQueue
        ? [h("dt", {}, "Position"), h("dd", { id: "workload-position" }, `${w.positionInClusterQueue} in ${w.clusterQueue}, ${w.positionInLocalQueue ?? "?"} in ${w.localQueue}`)]
        : [],
      w.reason ? row(w.state === "Pending" ? "Waiting because" : "Reason", reasonText(w)) : [],
    ),
  );
}
