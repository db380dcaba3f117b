// The comparison of jobs side by side (#/compare?jobs=…&align=…&metric=…):
// one chart per metric with a line per job, the hovered x's value of every
// job, each job's final figures, the differences between their specs, and
// the data as CSV. Its whole state is in the URL; the jobs are read once,
// with their progress history (GET .../history: no pods, no events).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { describeStatus, ApiError, jobKinds, jobPath, request } from "./api";
import {
  Align,
  alignedSeries,
  aligns,
  CompareState,
  ComparedJob,
  compareHash,
  comparisonCSV,
  finalMetrics,
  indexAtOrBefore,
  jobLabel,
  JobRef,
  maxCompared,
  metricNames,
  parseCompareQuery,
  runSeconds,
  Series,
  specDiff,
} from "./comparison";
import { h, replace, svg } from "./dom";
import { duration, timestamp } from "./format";
import { mergeHistory } from "./job";
import type { JobWithHistory } from "./types";

// palette tells up to ten lines apart (Tableau 10); more jobs repeat it.
const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

function colorOf(index: number): string {
  return palette[index % palette.length];
}

// stepIncrements keeps the step axis on whole steps.
const stepIncrements = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6].map((p) => m * p)).sort((a, b) => a - b);

const axisLabels: Record<Align, string> = { step: "step", elapsed: "time since start", time: "wall clock" };

// xText writes a hovered x as its axis counts it.
function xText(x: number, align: Align): string {
  if (align === "step") return `step ${x}`;
  if (align === "elapsed") return `${duration(x)} in`;
  return timestamp(new Date(x * 1000).toISOString());
}

function swatch(index: number): SVGSVGElement {
  return svg("svg", { class: "swatch", width: 18, height: 10, "aria-hidden": "true" }, svg("line", { x1: 1, y1: 5, x2: 17, y2: 5, stroke: colorOf(index), "stroke-width": 3 }));
}

function jobHref(c: ComparedJob): string {
  return `#/job/${encodeURIComponent(c.job.metadata.namespace)}/${encodeURIComponent(c.resource)}/${encodeURIComponent(c.job.metadata.name)}`;
}

// resourceOf is the resource of a kind as the URL may name it: the
// resource, the kind or its short name, in any case.
function resourceOf(kind: string): string | undefined {
  const k = kind.toLowerCase();
  return jobKinds().find((x) => x.resource === k || x.kind.toLowerCase() === k || x.shortName.toLowerCase() === k)?.resource;
}

export function comparePage(root: HTMLElement, query: string): () => void {
  const state: CompareState = parseCompareQuery(query);
  const notices = h("div", { class: "notices", id: "compare-notices" });
  const status = h("p", { class: "empty", id: "compare-state" }, `Loading ${state.jobs.length} job(s)…`);
  const controls = h("div", { class: "filters compare-controls" });
  const chartsBox = h("div", { class: "charts", id: "compare-charts" });
  const summary = h("div", { id: "compare-summary" });
  const diff = h("div", { id: "compare-diff" });
  let jobs: ComparedJob[] = [];
  let charts: uPlot[] = [];
  let csvURL: string | undefined;
  let left = false;

  replace(
    root,
    h("p", {}, h("a", { href: "#/" }, "← all jobs")),
    h("h1", {}, "Comparing jobs"),
    controls,
    notices,
    status,
    h("section", {}, h("h2", {}, "Metrics"), chartsBox),
    h("section", {}, h("h2", {}, "Final figures"), summary),
    h("section", {}, h("h2", {}, "Spec differences"), diff),
  );

  // The address is the state: changed in place, so that the page is not
  // built again and the jobs not read again.
  function setState(change: Partial<CompareState>): void {
    Object.assign(state, change);
    history.replaceState(null, "", compareHash(state));
    render();
  }

  async function load(): Promise<void> {
    if (state.jobs.length > maxCompared) {
      notices.append(h("p", { class: "refused" }, `${state.jobs.length} jobs named: the first ${maxCompared} are compared.`));
    }
    const refs = state.jobs.slice(0, maxCompared);
    const read = await Promise.all(refs.map((ref) => readJob(ref).catch((e: unknown) => ({ ref, error: e }))));
    if (left) return;
    jobs = [];
    for (const r of read) {
      if ("error" in r) {
        const why = r.error instanceof ApiError ? describeStatus(r.error.status) : String(r.error);
        notices.append(h("p", { class: "refused", "data-job": `${r.ref.namespace}/${r.ref.kind}/${r.ref.name}` }, `${r.ref.namespace}/${r.ref.kind}/${r.ref.name}: ${why}`));
      } else jobs.push(r);
    }
    render();
  }

  function render(): void {
    destroyCharts();
    const metrics = metricNames(jobs);
    const shown = state.metric && metrics.includes(state.metric) ? [state.metric] : metrics;
    renderControls(metrics, shown);
    status.textContent = jobs.length === 0 ? (state.jobs.length === 0 ? "No jobs named: select some in the list and press Compare." : "No job could be read.") : "";
    if (jobs.length === 0) {
      replace(chartsBox);
      replace(summary);
      replace(diff);
      return;
    }
    replace(chartsBox);
    if (shown.length === 0) chartsBox.append(h("p", { class: "empty" }, "No metrics reported."));
    const width = Math.max(360, Math.min(600, Math.floor((chartsBox.clientWidth || 1240) / 2) - 24));
    for (const metric of shown) charts.push(drawChart(chartsBox, metric, width));
    renderSummary(summary, jobs, shown);
    renderDiff(diff, jobs);
  }

  function renderControls(metrics: string[], shown: string[]): void {
    replace(
      controls,
      h(
        "label",
        {},
        "Align by ",
        h(
          "select",
          { id: "compare-align", onchange: (e: Event) => setState({ align: (e.target as HTMLSelectElement).value as Align }) },
          aligns.map((a) => h("option", { value: a, selected: a === state.align }, axisLabels[a])),
        ),
      ),
      h(
        "label",
        {},
        "Metric ",
        h(
          "select",
          { id: "compare-metric", onchange: (e: Event) => setState({ metric: (e.target as HTMLSelectElement).value }) },
          h("option", { value: "", selected: !metrics.includes(state.metric) }, "all"),
          metrics.map((m) => h("option", { value: m, selected: m === state.metric }, m)),
        ),
      ),
      jobs.length > 0 &&
        h(
          "a",
          {
            id: "compare-csv",
            class: "button",
            href: "#",
            download: "comparison.csv",
            // Made on the click, not with the charts: a row a report of
            // every job is thousands of rows.
            onclick: (e: Event) => {
              if (csvURL) URL.revokeObjectURL(csvURL);
              csvURL = URL.createObjectURL(new Blob([comparisonCSV(jobs, shown)], { type: "text/csv" }));
              (e.currentTarget as HTMLAnchorElement).href = csvURL;
            },
          },
          "Download CSV",
        ),
    );
  }

  // drawChart draws one metric: a line a job, and below it the legend,
  // which shows every job's value at the hovered x (its latest at or
  // before it), or its last when nothing is hovered.
  function drawChart(box: HTMLElement, metric: string, width: number): uPlot {
    const series: Series[] = jobs.map((c) => alignedSeries(c, metric, state.align));
    const data = uPlot.join(series.map((s) => [s.xs, s.ys] as uPlot.AlignedData));
    const lines = series.filter((s) => s.xs.length > 0).length;
    const points = series.reduce((n, s) => n + s.xs.length, 0);
    const figure = h("figure", { class: "chart compare", "data-metric": metric, "data-lines": lines, "data-points": points });
    const values = series.map(() => h("span", { class: "value" }));
    const ats = series.map(() => h("span", { class: "at" }));
    const legend = h(
      "ul",
      { class: "legend compare-legend" },
      jobs.map((c, i) => h("li", { "data-job": jobLabel(c) }, swatch(i), ` ${jobLabel(c)} `, values[i], " ", ats[i])),
    );
    const show = (x: number | undefined) => {
      series.forEach((s, i) => {
        const at = x === undefined ? s.xs.length - 1 : indexAtOrBefore(s.xs, x);
        values[i].textContent = at < 0 ? "—" : String(s.ys[at]);
        ats[i].textContent = at < 0 ? "" : `(${xText(s.xs[at], state.align)})`;
      });
    };
    show(undefined);
    box.append(figure);
    const few = points / Math.max(1, lines) < 100;
    const chart = new uPlot(
      {
        title: metric,
        width,
        height: 240,
        legend: { show: false },
        cursor: { sync: { key: "compare" } },
        scales: { x: { time: state.align === "time" } },
        axes: [
          {
            label: axisLabels[state.align],
            incrs: state.align === "step" ? stepIncrements : undefined,
            values: state.align === "elapsed" ? (_u, splits) => splits.map((v) => duration(v)) : undefined,
          },
          {},
        ],
        series: [{ label: axisLabels[state.align] }, ...jobs.map((c, i) => ({ label: jobLabel(c), stroke: colorOf(i), width: 1.5, points: { show: few } }))],
        hooks: {
          setCursor: [
            (u: uPlot) => {
              const idx = u.cursor.idx;
              show(idx === null || idx === undefined ? undefined : (u.data[0][idx] as number));
            },
          ],
        },
      },
      data,
      figure,
    );
    figure.append(legend);
    return chart;
  }

  function destroyCharts(): void {
    for (const c of charts) c.destroy();
    charts = [];
  }

  void load();
  return () => {
    left = true;
    destroyCharts();
    if (csvURL) URL.revokeObjectURL(csvURL);
  };
}

// readJob reads a job and its whole run's metrics: the progress history
// the job page reads, grown by status.progress.history's newer reports
// (all there is when the history is refused).
async function readJob(ref: JobRef): Promise<ComparedJob> {
  const resource = resourceOf(ref.kind);
  if (!resource) throw new Error(`no training job kind ${JSON.stringify(ref.kind)}`);
  const detail = await request<JobWithHistory>("GET", `${jobPath(ref.namespace, resource, ref.name)}/history`);
  const samples = mergeHistory(detail.history?.samples ?? [], detail.job.status.progress?.history ?? []);
  return { job: detail.job, resource, samples };
}

function renderSummary(el: HTMLElement, jobs: ComparedJob[], metrics: string[]): void {
  const now = Date.now();
  replace(
    el,
    h(
      "table",
      { id: "compare-summary-table" },
      h("thead", {}, h("tr", {}, ["Job", "Kind", "Phase", ...metrics.map((m) => `final ${m}`), "Step", "Run time", "Restarts", "Lost work"].map((t) => h("th", {}, t)))),
      h(
        "tbody",
        {},
        jobs.map((c, i) => {
          const s = c.job.status;
          const finals = finalMetrics(c);
          const ran = runSeconds(c, now);
          const a = s.accounting;
          const lost = [
            a?.lostSteps ? `${a.lostSteps} steps` : "",
            a?.lostReplicaSeconds ? `${duration(a.lostReplicaSeconds)} replica-time` : "",
            a?.interruptions ? `${a.interruptions} interruption${a.interruptions > 1 ? "s" : ""}` : "",
          ].filter(Boolean).join(", ");
          const phase = s.phase || "Pending";
          return h(
            "tr",
            { "data-job": jobLabel(c) },
            h("td", {}, swatch(i), " ", h("a", { href: jobHref(c) }, jobLabel(c))),
            h("td", {}, c.job.kind),
            h("td", { class: `phase phase-${phase}` }, phase),
            metrics.map((m) => h("td", { class: "number", "data-metric": m }, finals.get(m) ?? "")),
            h("td", { class: "number" }, s.progress?.step ?? ""),
            h("td", {}, ran === undefined ? "" : duration(ran)),
            h("td", { class: "number" }, s.backoffCount ?? 0),
            h("td", {}, lost || "none"),
          );
        }),
      ),
    ),
  );
}

function renderDiff(el: HTMLElement, jobs: ComparedJob[]): void {
  const { differences, alike } = specDiff(jobs.map((c) => c.job));
  if (jobs.length < 2) {
    replace(el, h("p", { class: "empty" }, "One job: nothing to compare its spec with."));
    return;
  }
  if (differences.length === 0) {
    replace(el, h("p", { class: "empty", id: "compare-diff-none" }, `The specs are alike: ${alike} field(s) of env, command, args, images, resources and replicas compared.`));
    return;
  }
  replace(
    el,
    h(
      "table",
      { class: "diff", id: "compare-diff-table" },
      h("caption", {}, `${differences.length} field(s) differ; ${alike} alike are not shown. Cells that differ from the first job's are marked.`),
      h("thead", {}, h("tr", {}, h("th", {}, "Field"), jobs.map((c, i) => h("th", {}, swatch(i), " ", jobLabel(c))))),
      h(
        "tbody",
        {},
        differences.map((d) =>
          h(
            "tr",
            { "data-field": d.field },
            h("th", { scope: "row" }, d.field),
            d.values.map((v, i) =>
              h("td", { class: i > 0 && v !== d.values[0] ? "changed" : undefined }, v === undefined ? h("span", { class: "empty" }, "(not set)") : h("code", {}, v)),
            ),
          ),
        ),
      ),
    ),
  );
}

// JobSelection is the checkboxes that pick jobs for a comparison, and the
// button that opens it; the list and a search's trials table keep one
// across their redraws.
export class JobSelection {
  private readonly chosen = new Map<string, JobRef>();
  readonly button: HTMLButtonElement;

  constructor() {
    this.button = h("button", { type: "button", id: "compare-selected", onclick: () => this.open() });
    this.update();
  }

  // cell is a row's checkbox, checked when the job is chosen.
  cell(ref: JobRef): HTMLElement {
    const key = `${ref.namespace}/${ref.kind}/${ref.name}`;
    return h(
      "td",
      { class: "select" },
      h("input", {
        type: "checkbox",
        "data-select": key,
        "aria-label": `select ${ref.namespace}/${ref.name} to compare`,
        checked: this.chosen.has(key),
        onchange: (e: Event) => {
          if ((e.target as HTMLInputElement).checked) this.chosen.set(key, ref);
          else this.chosen.delete(key);
          this.update();
        },
      }),
    );
  }

  // keep forgets the chosen jobs that are gone.
  keep(present: (key: string) => boolean): void {
    for (const key of [...this.chosen.keys()]) if (!present(key)) this.chosen.delete(key);
    this.update();
  }

  private update(): void {
    const n = this.chosen.size;
    this.button.disabled = n < 2;
    this.button.textContent = n ? `Compare ${n} selected` : "Compare: select jobs";
    this.button.title = n < 2 ? "Select two jobs or more to compare them" : "";
  }

  private open(): void {
    if (this.chosen.size < 2) return;
    location.hash = compareHash({ jobs: [...this.chosen.values()], align: "step", metric: "" });
  }
}
