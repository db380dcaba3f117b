// The cluster page, #/cluster, for the platform team: every node with what
// it can hold (allocatable) and what the pods on it ask for (allocated), of
// CPU, memory and the extended resources such as nvidia.com/gpu; the
// training jobs with pods on each node; and the nodes jobs named suspect,
// with the jobs and why. It needs the right to list nodes: for anyone else
// the page shows the API's 403. It reads the cluster again every 15 s while
// the browser shows it.

import { ApiError, describeStatus, request, Status } from "./api";
import { h, replace } from "./dom";
import { age } from "./format";
import { formatQuantity, Quantity } from "./quantity";

interface ResourceUse {
  allocatable: Quantity;
  allocated: Quantity;
  // fraction is allocated over allocatable; absent where nothing is.
  fraction?: number;
}

interface NodeJob {
  kind: string;
  // resource is absent for a kind this page does not know: no link.
  resource?: string;
  namespace: string;
  name: string;
  pods: number;
}

interface SuspectMark {
  kind: string;
  resource: string;
  namespace: string;
  job: string;
  reason: string;
  message?: string;
  time: string;
}

interface NodeView {
  name: string;
  ready: string;
  unschedulable?: boolean;
  // absent: a node a job named suspect that is no longer in the cluster.
  absent?: boolean;
  resources: Record<string, ResourceUse>;
  pods: number;
  jobs: NodeJob[];
  suspects: SuspectMark[];
}

// ClusterView is the answer of GET /api/cluster (pkg/dashboard/cluster.go).
export interface ClusterView {
  resources: string[];
  nodes: NodeView[];
  totals: Record<string, ResourceUse>;
  podsRefused?: Status;
  jobsRefused?: Status[];
}

const interval = 15_000;

export function clusterPage(root: HTMLElement): () => void {
  const state = h("p", { class: "empty", id: "cluster-state" }, "Loading…");
  const notices = h("div", { class: "notices", id: "cluster-notices" });
  const totals = h("div", { class: "cluster-totals", id: "cluster-totals" });
  const table = h("div", { id: "cluster-table" });
  replace(root, h("h1", {}, "Cluster"), state, notices, totals, table);

  let timer: number | undefined;
  let left = false;
  const load = async () => {
    timer = undefined;
    if (!document.hidden) {
      try {
        render(await request<ClusterView>("GET", "/api/cluster"));
      } catch (e) {
        if (left) return;
        // A refusal is the page's answer: the user may not list nodes.
        const refused = e instanceof ApiError;
        state.className = "refused";
        state.textContent = refused ? describeStatus(e.status) : String(e);
        if (refused && e.status.code === 403) {
          replace(notices);
          replace(totals);
          replace(table);
          return;
        }
      }
    }
    if (!left) timer = window.setTimeout(load, interval);
  };

  function render(view: ClusterView): void {
    if (left) return;
    const present = view.nodes.filter((n) => !n.absent);
    state.className = "empty";
    state.textContent = present.length === 0 ? "No nodes." : "";
    replace(
      notices,
      view.podsRefused &&
        h("p", { class: "refused", id: "cluster-pods-refused" }, `Pods: ${describeStatus(view.podsRefused)}. What the pods ask for and their jobs are not shown.`),
      (view.jobsRefused ?? []).map((s) => h("p", { class: "refused" }, `Suspect nodes: ${describeStatus(s)}`)),
    );
    const allocatedKnown = !view.podsRefused;
    replace(
      totals,
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Nodes"),
        h("dd", {}, `${present.length} (${present.filter((n) => n.ready === "True").length} ready)`),
        view.resources.flatMap((r) => [h("dt", {}, resourceLabel(r)), h("dd", { "data-total": r }, useCell(r, view.totals[r], allocatedKnown))]),
      ),
    );
    replace(
      table,
      h(
        "table",
        { class: "cluster", id: "cluster-nodes" },
        h(
          "thead",
          {},
          h("tr", {}, ["Node", "Status", ...view.resources.map(resourceLabel), "Pods", "Training jobs", "Suspect"].map((c) => h("th", {}, c))),
        ),
        h(
          "tbody",
          {},
          view.nodes.map((n) => nodeRow(n, view.resources, allocatedKnown)),
        ),
      ),
    );
  }

  void load();
  return () => {
    left = true;
    window.clearTimeout(timer);
  };
}

function nodeRow(n: NodeView, resources: string[], allocatedKnown: boolean): HTMLElement {
  const status = n.absent
    ? "not in the cluster"
    : [n.ready === "True" ? "Ready" : n.ready === "False" ? "NotReady" : "Unknown", n.unschedulable ? "SchedulingDisabled" : ""].filter(Boolean).join(", ");
  return h(
    "tr",
    {
      "data-node": n.name,
      "data-ready": n.ready,
      "data-schedulable": String(!n.unschedulable),
      "data-suspect": n.suspects.length > 0 ? "true" : undefined,
      class: n.suspects.length > 0 ? "suspect" : undefined,
    },
    h("td", { class: "node" }, n.name),
    h("td", { class: n.absent || n.ready !== "True" || n.unschedulable ? "node-down" : "node-up" }, status),
    resources.map((r) => h("td", { "data-resource": r }, n.absent ? "" : useCell(r, n.resources[r], allocatedKnown))),
    h("td", { class: "number" }, n.absent || !allocatedKnown ? "" : n.pods),
    h(
      "td",
      { class: "jobs" },
      h(
        "ul",
        { class: "plain" },
        n.jobs.map((j) =>
          h(
            "li",
            { "data-job": `${j.namespace}/${j.resource ?? j.kind}/${j.name}` },
            j.resource ? h("a", { href: jobHref(j.namespace, j.resource, j.name) }, `${j.namespace}/${j.name}`) : `${j.namespace}/${j.name} (${j.kind})`,
            j.pods > 1 ? ` (${j.pods} pods)` : "",
          ),
        ),
      ),
    ),
    h(
      "td",
      {},
      h(
        "ul",
        { class: "plain" },
        n.suspects.map((s) =>
          h(
            "li",
            { "data-suspect-by": `${s.namespace}/${s.resource}/${s.job}`, "data-reason": s.reason },
            h("span", { class: "suspect-reason" }, s.reason),
            " by ",
            h("a", { href: jobHref(s.namespace, s.resource, s.job) }, `${s.namespace}/${s.job}`),
            `, ${age(s.time)} ago`,
            s.message ? h("span", { class: "message" }, `: ${s.message}`) : "",
          ),
        ),
      ),
    ),
  );
}

function jobHref(namespace: string, resource: string, name: string): string {
  return `#/job/${encodeURIComponent(namespace)}/${encodeURIComponent(resource)}/${encodeURIComponent(name)}`;
}

function resourceLabel(name: string): string {
  if (name === "cpu") return "CPU";
  if (name === "memory") return "Memory";
  if (name === "nvidia.com/gpu") return "GPUs (nvidia.com/gpu)";
  return name;
}

// useCell shows allocated of allocatable, with a bar of the fraction; only
// allocatable where the pods could not be listed.
function useCell(name: string, use: ResourceUse | undefined, allocatedKnown: boolean): Node | string {
  if (!use) return "";
  const capacity = formatQuantity(name, use.allocatable);
  if (!allocatedKnown) return h("span", { class: "use", title: `allocatable ${use.allocatable}` }, capacity);
  const fraction = use.fraction;
  return h(
    "span",
    { class: "use", title: `allocated ${use.allocated} of allocatable ${use.allocatable}` },
    fraction === undefined ? "" : h("meter", { min: 0, max: 1, low: 0.7, high: 0.9, optimum: 0, value: Math.min(fraction, 1) }),
    ` ${formatQuantity(name, use.allocated)} / ${capacity}`,
  );
}
