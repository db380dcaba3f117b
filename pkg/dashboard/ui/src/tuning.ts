// The searches (TuningJobs): the list of them, #/tuning, and a search's page,
// #/tuning/NS/NAME, with its trials in a table sortable by any column, every
// trial's objective curve over its progress, and the objective against each
// parameter. A search changes as its trials report: the pages read it again
// every few seconds while they are open and the browser shows them, and the
// search's page stops once the search has ended.

import { ApiError, request } from "./api";
import { errorMessage, NamespacedList, poll, pollList } from "./polledlist";
import { JobSelection } from "./compare";
import { h, replace, svg } from "./dom";
import { age, duration } from "./format";
import { renderConditions } from "./job";
import { Cell, linearScale, logScale, numeric, polylinePoints, Scale, sortRows, tickLabel } from "./plot";
import { TrialStatus, TuningDetail, TuningJob, TuningParameter, TuningSummary } from "./types";

// How often the pages read the searches again. The list reads whole
// searches on the server, a page of them at a time: it is read less often.
const listInterval = 10_000;
const searchInterval = 5_000;

// The search states (batch.TuningState), and the trial states in the order
// a trial goes through them, which the state column sorts by.
const searchStates = ["Pending", "Running", "Suspended", "Succeeded", "Failed"];
const trialStates = ["Pending", "Running", "Paused", "Succeeded", "Stopped", "Failed"];

export function searchHref(namespace: string, name: string): string {
  return `#/tuning/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

function rule(earlyStopping: string | undefined): string {
  return earlyStopping ? `+${earlyStopping}` : "";
}

// searchesPage lists the searches of a namespace, or of all of them.
export function searchesPage(root: HTMLElement): () => void {
  let namespace = "";
  let state = "";
  let list: NamespacedList<TuningSummary> | undefined;
  const notices = h("div", { class: "notices", id: "tuning-notices" });
  const rows = h("tbody");
  const empty = h("p", { class: "empty", id: "tuning-list-state" }, "Loading…");

  const namespaceInput = h("input", {
    type: "search",
    id: "tuning-filter-namespace",
    placeholder: "namespace (all)",
    "aria-label": "namespace (all)",
    onchange: (e: Event) => {
      namespace = (e.target as HTMLInputElement).value.trim();
      list = undefined;
      render();
      searches.reload();
    },
  });
  const stateSelect = h(
    "select",
    {
      id: "tuning-filter-state",
      "aria-label": "state",
      onchange: (e: Event) => {
        state = (e.target as HTMLSelectElement).value;
        render();
      },
    },
    h("option", { value: "" }, "state: all"),
    searchStates.map((s) => h("option", { value: s }, s)),
  );

  replace(
    root,
    h("h1", {}, "Hyperparameter searches"),
    h("div", { class: "filters" }, namespaceInput, stateSelect),
    notices,
    h(
      "table",
      { class: "searches", id: "searches" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Name", "Namespace", "State", "Objective", "Algorithm", "Trials", "Running", "Paused", "Succeeded", "Failed", "Stopped", "Best", "Best trial", "Age"].map(
            (c) => h("th", {}, c),
          ),
        ),
      ),
      rows,
    ),
    empty,
  );

  function render(): void {
    const now = Date.now();
    const items = list?.items ?? [];
    const shown = items.filter((s) => !state || s.state === state);
    replace(rows, shown.map((s) => searchRow(s, now)));
    empty.textContent = !list ? (notices.childElementCount ? "" : "Loading…") : shown.length ? "" : items.length ? "No search matches the filters." : "No searches.";
  }

  const searches = pollList<TuningSummary>({
    path: "/api/tuningjobs",
    namespace: () => namespace,
    interval: listInterval,
    what: "searches",
    notices,
    truncatedId: "tuning-truncated",
    loaded: (got) => {
      if (got) list = got;
      render();
    },
  });
  return searches.stop;
}

function searchRow(s: TuningSummary, now: number): HTMLElement {
  const c = s.counts ?? {};
  return h(
    "tr",
    { "data-search": `${s.namespace}/${s.name}`, "data-state": s.state },
    h("td", {}, h("a", { href: searchHref(s.namespace, s.name) }, s.name)),
    h("td", {}, s.namespace),
    h("td", { class: `state state-${s.state}` }, s.state),
    h("td", {}, `${s.objective.direction} ${s.objective.metric}`),
    h("td", {}, s.algorithm + rule(s.earlyStopping)),
    h("td", {}, `${s.trials}/${s.maxTrials}`),
    h("td", {}, (c.running ?? 0) + (c.pending ?? 0)),
    h("td", {}, c.paused ?? 0),
    h("td", {}, c.succeeded ?? 0),
    h("td", {}, c.failed ?? 0),
    h("td", {}, c.stopped ?? 0),
    h("td", { class: "number" }, s.bestValue ?? ""),
    h("td", {}, s.bestTrial ?? ""),
    h("td", { title: s.created }, age(s.created, now)),
  );
}

// A column of the trials table: what it sorts by and what it shows.
interface Column {
  key: string;
  label: string;
  cell: (t: TrialStatus) => Cell;
  show: (t: TrialStatus) => Node | string | number;
}

interface Sort {
  key: string;
  descending: boolean;
}

// searchPage shows one search.
export function searchPage(root: HTMLElement, namespace: string, name: string): () => void {
  const path = `/api/tuningjobs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
  const header = h("div", { class: "search-header" }, h("h1", {}, `${namespace}/${name}`), h("p", { class: "empty" }, "Loading…"));
  const conditions = h("ol", { class: "timeline", id: "conditions" });
  const trials = h("div", { id: "trials" });
  const curves = h("div", { id: "curves" });
  const parameters = h("div", { class: "charts", id: "parameters" });
  let detail: TuningDetail | undefined;
  let shownVersion: string | undefined;
  // Best first until a header is clicked.
  let sort: Sort | undefined;
  // The trials ticked for a comparison, kept across the redraws.
  const selection = new JobSelection();
  let left = false;

  replace(
    root,
    h("p", {}, h("a", { href: "#/tuning" }, "← all searches")),
    header,
    h("section", {}, h("h2", {}, "Conditions"), conditions),
    h("section", {}, h("h2", {}, "Trials"), trials),
    h("section", {}, h("h2", {}, "Objective over progress"), curves),
    h("section", {}, h("h2", {}, "Objective by parameter"), parameters),
  );

  async function load(): Promise<boolean> {
    let got: TuningDetail;
    try {
      got = await request<TuningDetail>("GET", path);
    } catch (e) {
      if (left) return false;
      shownVersion = undefined;
      replace(header, h("h1", {}, `${namespace}/${name}`), h("p", { class: "refused", id: "search-error" }, errorMessage(e)));
      // A search that is gone, or that the user may not read, is not asked
      // for again; after anything else (a lost connection) it is.
      return !(e instanceof ApiError && [401, 403, 404].includes(e.status.code));
    }
    if (left) return false;
    const version = got.search.metadata.resourceVersion;
    if (version === undefined || version !== shownVersion) {
      detail = got;
      shownVersion = version;
      render();
    }
    return got.state !== "Succeeded" && got.state !== "Failed";
  }

  function render(): void {
    if (!detail) return;
    const search = detail.search;
    renderSearchHeader(header, detail);
    renderConditions(conditions, search.status.conditions);
    renderTrials();
    replace(curves, curvesChart(search));
    replace(parameters, parameterCharts(search));
  }

  function renderTrials(): void {
    if (!detail) return;
    const search = detail.search;
    const list = search.status.trials ?? [];
    if (list.length === 0) {
      replace(trials, h("p", { class: "empty" }, "No trials yet."));
      return;
    }
    const maximize = search.spec.objective.direction === "maximize";
    const current = sort ?? { key: "value", descending: maximize };
    const columns = trialColumns(detail);
    const column = columns.find((c) => c.key === current.key) ?? columns[0];
    const rows = sortRows(list, column.cell, current.descending);
    const best = search.status.bestTrial;
    const trialResource = detail.trialResource;
    const header = columns.map((c) => {
      const sorted = c.key === column.key;
      return h(
        "th",
        {
          "data-column": c.key,
          "aria-sort": sorted ? (current.descending ? "descending" : "ascending") : "none",
          class: "sortable",
          onclick: () => {
            // The same column again turns its order; another starts
            // ascending, the objective best first.
            sort = sorted ? { key: c.key, descending: !current.descending } : { key: c.key, descending: c.key === "value" && maximize };
            renderTrials();
          },
        },
        h("button", { type: "button" }, c.label, sorted ? (current.descending ? " ▼" : " ▲") : ""),
      );
    });
    replace(
      trials,
      trialResource && h("div", { class: "filters" }, selection.button),
      h(
        "table",
        { class: "trials", id: "trials-table" },
        h("caption", {}, `${list.length} trial(s); click a column's header to sort by it.`),
        h("thead", {}, h("tr", {}, trialResource && h("th", {}, ""), header)),
        h(
          "tbody",
          {},
          rows.map((t) =>
            h(
              "tr",
              {
                "data-trial": t.name,
                "data-state": t.state,
                "data-best": t.name === best ? "true" : undefined,
                "data-promoted": (t.promotions ?? 0) > 0 ? "true" : undefined,
                class: t.name === best ? "best" : undefined,
              },
              trialResource && selection.cell({ namespace: search.metadata.namespace, kind: trialResource, name: t.name }),
              columns.map((c) => h("td", { class: c.key === "value" ? "number" : undefined }, c.show(t))),
            ),
          ),
        ),
      ),
    );
  }

  const stop = poll(load, searchInterval);
  return () => {
    left = true;
    stop();
  };
}

// trialColumns are the trials table's: the trial, its state, value,
// progress, rung and promotions, one per parameter, and its message.
function trialColumns(detail: TuningDetail): Column[] {
  const search = detail.search;
  const best = search.status.bestTrial;
  const link = (t: TrialStatus): Node | string =>
    detail.trialResource
      ? h("a", { href: `#/job/${encodeURIComponent(search.metadata.namespace)}/${encodeURIComponent(detail.trialResource)}/${encodeURIComponent(t.name)}` }, t.name)
      : t.name;
  const columns: Column[] = [
    {
      key: "trial",
      label: "Trial",
      cell: (t) => t.index,
      show: (t) => h("span", {}, link(t), t.name === best ? h("span", { class: "badge best", title: "the best trial so far" }, "best") : ""),
    },
    { key: "state", label: "State", cell: (t) => trialStates.indexOf(t.state), show: (t) => h("span", { class: `state state-${t.state}` }, t.state) },
    { key: "value", label: search.spec.objective.metric || "Value", cell: (t) => t.value, show: (t) => t.value ?? "" },
    { key: "progress", label: "Progress", cell: (t) => t.progress, show: (t) => t.progress ?? "" },
    {
      key: "rung",
      label: "Rung",
      cell: (t) => t.rung ?? 0,
      show: (t) => (t.rungValues?.length ? h("span", { title: `values at the rungs: ${t.rungValues.join(", ")}` }, t.rung ?? 0) : t.rung ?? 0),
    },
    { key: "promotions", label: "Promotions", cell: (t) => t.promotions ?? 0, show: (t) => t.promotions ?? 0 },
  ];
  for (const p of parameterNames(search)) {
    columns.push({ key: `param:${p}`, label: p, cell: (t) => parameterValue(t, p), show: (t) => parameterValue(t, p) ?? "" });
  }
  columns.push({ key: "message", label: "Message", cell: (t) => t.message, show: (t) => t.message ?? "" });
  return columns;
}

// parameterNames are the spec's parameters, in its order, then any a trial
// names that the spec does not (none, normally).
function parameterNames(search: TuningJob): string[] {
  const names = (search.spec.parameters ?? []).map((p) => p.name);
  for (const t of search.status.trials ?? []) {
    for (const p of t.parameters ?? []) if (!names.includes(p.name)) names.push(p.name);
  }
  return names;
}

function parameterValue(t: TrialStatus, name: string): string | undefined {
  return t.parameters?.find((p) => p.name === name)?.value;
}

function fact(term: string, value: Node | string | number): HTMLElement[] {
  return [h("dt", {}, term), h("dd", {}, value)];
}

function renderSearchHeader(el: HTMLElement, detail: TuningDetail): void {
  const { search, state } = detail;
  const { spec, status } = search;
  const o = spec.objective;
  const c = status.counts ?? {};
  const counts = (["running", "pending", "paused", "succeeded", "stopped", "failed"] as const)
    .filter((k) => (c[k] ?? 0) > 0)
    .map((k) => `${c[k]} ${k}`)
    .join(", ");
  const es = spec.earlyStopping;
  const stopping = es?.asha
    ? `asha: rungs at ${es.asha.minResource} ${es.asha.resource ?? "steps"} × ${es.asha.reductionFactor ?? 3}^r, ${es.asha.rungs ?? 3} rungs`
    : es?.medianStop
      ? `median stop from step ${es.medianStop.startStep ?? 1}, once ${es.medianStop.minTrials ?? 3} other trials reported`
      : "none";
  const algorithm = spec.algorithm?.name ?? "random";
  const seed = spec.algorithm?.seed ?? status.seed;
  const bestLink =
    status.bestTrial && detail.trialResource
      ? h("a", { href: `#/job/${encodeURIComponent(search.metadata.namespace)}/${encodeURIComponent(detail.trialResource)}/${encodeURIComponent(status.bestTrial)}` }, status.bestTrial)
      : status.bestTrial ?? "";
  replace(
    el,
    h("h1", {}, `${search.metadata.namespace}/${search.metadata.name}`),
    h(
      "dl",
      { class: "facts" },
      fact("State", h("span", { class: `state state-${state}`, id: "search-state" }, state)),
      fact("Objective", `${o.direction} ${o.metric}${o.trialValue && o.trialValue !== "last" ? ` (its ${o.trialValue}${o.trialValue === "atStep" && o.step !== undefined ? ` ${o.step}` : ""} value)` : ""}${o.goal ? `, goal ${o.goal}` : ""}`),
      fact("Algorithm", `${algorithm}${algorithm === "tpe" ? `, ${spec.algorithm?.startupTrials ?? 3} random trials first` : ""}${seed !== undefined ? `, seed ${seed}` : ""}`),
      fact("Early stopping", stopping),
      fact("Trials", `${status.trials?.length ?? 0} of ${spec.maxTrials ?? ""}, ${spec.parallelTrials ?? 1} at a time${spec.suspend ? ", held (suspended)" : ""}`),
      counts && fact("By state", counts),
      status.bestValue !== undefined && fact("Best", h("span", { id: "search-best" }, `${status.bestValue} `, bestLink)),
      fact("Age", age(search.metadata.creationTimestamp)),
      status.startTime &&
        fact("Running for", duration(((status.completionTime ? Date.parse(status.completionTime) : Date.now()) - Date.parse(status.startTime)) / 1000)),
    ),
  );
}

// The charts' geometry, in SVG units.
interface Box {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

interface Tick {
  at: number;
  label: string;
}

function ticksOf(scale: Scale): Tick[] {
  return scale.ticks.map((t) => ({ at: scale.map(t), label: tickLabel(t) }));
}

// axes draws a chart's axes, grid, ticks and labels.
function axes(box: Box, xTicks: Tick[], yTicks: Tick[], xLabel: string, yLabel: string): SVGGElement {
  const bottom = box.height - box.bottom;
  const right = box.width - box.right;
  return svg(
    "g",
    { class: "axes" },
    xTicks.flatMap((t) => [
      svg("line", { class: "grid", x1: t.at, y1: box.top, x2: t.at, y2: bottom }),
      svg("text", { x: t.at, y: bottom + 14, "text-anchor": "middle" }, t.label),
    ]),
    yTicks.flatMap((t) => [
      svg("line", { class: "grid", x1: box.left, y1: t.at, x2: right, y2: t.at }),
      svg("text", { x: box.left - 4, y: t.at + 4, "text-anchor": "end" }, t.label),
    ]),
    svg("line", { class: "axis", x1: box.left, y1: bottom, x2: right, y2: bottom }),
    svg("line", { class: "axis", x1: box.left, y1: box.top, x2: box.left, y2: bottom }),
    svg("text", { class: "label", x: (box.left + right) / 2, y: box.height - 4, "text-anchor": "middle" }, xLabel),
    svg("text", { class: "label", transform: `translate(12 ${(box.top + bottom) / 2}) rotate(-90)`, "text-anchor": "middle" }, yLabel),
  );
}

function promoted(t: TrialStatus): boolean {
  return (t.promotions ?? 0) > 0;
}

// curvesChart draws every trial's objective over its progress, a line a
// trial: the trials asha promoted thicker and in a color of their own, the
// best one over them all.
function curvesChart(search: TuningJob): HTMLElement {
  const trials = search.status.trials ?? [];
  const best = search.status.bestTrial;
  const metric = search.spec.objective.metric;
  const series = trials
    .map((t) => ({
      trial: t,
      points: (t.curve ?? []).flatMap((p): [number, number][] => {
        const y = numeric(p.value);
        return y === undefined || !Number.isFinite(p.progress) ? [] : [[p.progress, y]];
      }),
    }))
    .filter((s) => s.points.length > 0);
  if (series.length === 0) return h("p", { class: "empty" }, "No trial has reported its objective yet.");
  const box: Box = { width: 720, height: 320, left: 64, right: 16, top: 12, bottom: 40 };
  const x = linearScale(series.flatMap((s) => s.points.map((p) => p[0])), [box.left, box.width - box.right]);
  const y = linearScale(series.flatMap((s) => s.points.map((p) => p[1])), [box.height - box.bottom, box.top]);
  // Drawn in layers: the others, then the promoted, then the best on top.
  const layer = (t: TrialStatus) => (t.name === best ? 2 : promoted(t) ? 1 : 0);
  const ordered = sortRows(series, (s) => layer(s.trial), false);
  const lines = ordered.map(({ trial, points }) => {
    const cls = ["curve", promoted(trial) && "promoted", trial.name === best && "best"].filter(Boolean).join(" ");
    const title = svg(
      "title",
      {},
      `${trial.name} (${trial.state}${promoted(trial) ? `, promoted ${trial.promotions}×` : ""}): ${metric} ${trial.value ?? points[points.length - 1][1]}`,
    );
    const at = points.map(([px, py]): [number, number] => [x.map(px), y.map(py)]);
    const attrs = { class: cls, "data-trial": trial.name, "data-points": points.length, "data-promoted": promoted(trial) ? "true" : undefined };
    return at.length === 1
      ? svg("circle", { ...attrs, cx: at[0][0].toFixed(1), cy: at[0][1].toFixed(1), r: 3 }, title)
      : svg("polyline", { ...attrs, points: polylinePoints(at) }, title);
  });
  const swatch = (cls: string) => svg("svg", { class: "swatch", width: 24, height: 10, "aria-hidden": "true" }, svg("line", { class: cls, x1: 0, y1: 5, x2: 24, y2: 5 }));
  const promotedCount = trials.filter(promoted).length;
  return h(
    "figure",
    { class: "chart wide" },
    svg(
      "svg",
      {
        class: "plot",
        id: "curves-chart",
        viewBox: `0 0 ${box.width} ${box.height}`,
        width: box.width,
        height: box.height,
        role: "img",
        "aria-label": `${metric} over progress, a line a trial`,
        "data-trials": series.length,
      },
      axes(box, ticksOf(x), ticksOf(y), "progress", metric),
      lines,
    ),
    h(
      "ul",
      { class: "legend", id: "curves-legend" },
      h("li", { "data-legend": "other" }, swatch("curve"), ` other trials (${trials.length - promotedCount})`),
      h("li", { "data-legend": "promoted" }, swatch("curve promoted"), ` promoted by asha after a pause (${promotedCount})`),
      best && h("li", { "data-legend": "best" }, swatch("curve best"), ` the best: ${best}`),
    ),
  );
}

// jitter spreads a categorical value's points across its band, the same
// way at every draw: from -0.5 to 0.5 by the trial's index.
function jitter(index: number): number {
  return ((index * 7919) % 13) / 12 - 0.5;
}

// parameterCharts draws, for each parameter, the objective (y) of every
// trial that has one against the trial's value of the parameter (x): on a
// logarithmic axis for a parameter sampled on one, in bands for a
// categorical one. Every chart shares the objective's axis.
function parameterCharts(search: TuningJob): HTMLElement[] {
  const params = search.spec.parameters ?? [];
  if (params.length === 0) return [h("p", { class: "empty" }, "The search varies no parameter.")];
  const metric = search.spec.objective.metric;
  const best = search.status.bestTrial;
  const valued = (search.status.trials ?? []).flatMap((t) => {
    const v = numeric(t.value);
    return v === undefined ? [] : [{ trial: t, value: v }];
  });
  const box: Box = { width: 340, height: 240, left: 56, right: 12, top: 12, bottom: 40 };
  const y = linearScale(
    valued.map((v) => v.value),
    [box.height - box.bottom, box.top],
    4,
  );
  return params.map((p) => {
    const { kind, xTicks, points } = placeParameter(p, valued, box);
    const circles = sortRows(points, (pt) => (pt.trial.name === best ? 1 : 0), false).map((pt) =>
      svg(
        "circle",
        {
          class: pt.trial.name === best ? "point best" : "point",
          cx: pt.x.toFixed(1),
          cy: y.map(pt.value).toFixed(1),
          r: pt.trial.name === best ? 5 : 3.5,
          "data-trial": pt.trial.name,
        },
        svg("title", {}, `${pt.trial.name}: ${p.name}=${parameterValue(pt.trial, p.name)}, ${metric}=${pt.trial.value}`),
      ),
    );
    return h(
      "figure",
      { class: "chart scatter", "data-parameter": p.name, "data-scale": kind, "data-points": points.length },
      h("figcaption", {}, `${metric} by ${p.name}${kind === "log" ? " (log scale)" : ""}`),
      svg(
        "svg",
        {
          class: "plot",
          viewBox: `0 0 ${box.width} ${box.height}`,
          width: box.width,
          height: box.height,
          role: "img",
          "aria-label": `${metric} by ${p.name}, a point a trial`,
        },
        axes(box, xTicks, ticksOf(y), p.name, metric),
        circles,
      ),
      points.length === 0 && h("p", { class: "empty" }, "No trial with a value yet."),
    );
  });
}

interface Placed {
  trial: TrialStatus;
  value: number;
  x: number;
}

// placeParameter finds each valued trial's place along the parameter's
// axis, and the axis's ticks. A value that has no place on it (not a
// number, or not above 0 on a log axis) is left out.
function placeParameter(
  p: TuningParameter,
  valued: { trial: TrialStatus; value: number }[],
  box: Box,
): { kind: "log" | "linear" | "categorical"; xTicks: Tick[]; points: Placed[] } {
  const range: [number, number] = [box.left + 8, box.width - box.right - 8];
  if (p.type === "categorical") {
    const categories = [...(p.values ?? [])];
    for (const v of valued) {
      const c = parameterValue(v.trial, p.name);
      if (c !== undefined && !categories.includes(c)) categories.push(c);
    }
    const band = (range[1] - range[0]) / Math.max(1, categories.length);
    const center = (i: number) => range[0] + band * (i + 0.5);
    const short = (c: string) => (c.length > 12 ? `${c.slice(0, 11)}…` : c);
    return {
      kind: "categorical",
      xTicks: categories.map((c, i) => ({ at: center(i), label: short(c) })),
      points: valued.flatMap((v) => {
        const i = categories.indexOf(parameterValue(v.trial, p.name) ?? "");
        return i < 0 ? [] : [{ ...v, x: center(i) + jitter(v.trial.index) * band * 0.4 }];
      }),
    };
  }
  const log = p.logScale === true;
  const xs = valued.flatMap((v) => {
    const x = numeric(parameterValue(v.trial, p.name));
    return x === undefined || (log && x <= 0) ? [] : [{ ...v, at: x }];
  });
  // The axis spans the parameter's range, and any value outside it.
  const bounds = [numeric(p.min), numeric(p.max)].filter((b): b is number => b !== undefined && (!log || b > 0));
  const domain = [...bounds, ...xs.map((v) => v.at)];
  const scale = log ? logScale(domain, range) : linearScale(domain, range, 4);
  return {
    kind: log ? "log" : "linear",
    xTicks: ticksOf(scale),
    points: xs.map((v) => ({ trial: v.trial, value: v.value, x: scale.map(v.at) })),
  };
}
