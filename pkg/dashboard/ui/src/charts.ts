// The metrics charts of a job page: one uPlot chart per metric in
// status.progress.history, over steps (or reports, for a job that reports no
// step). uPlot zooms on a dragged range and shows the hovered value in its
// legend.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h, replace } from "./dom";
import { numeric } from "./plot";
import { ProgressSample } from "./types";

export interface MetricSeries {
  name: string;
  xs: number[];
  ys: number[];
}

// metricSeries turns the history into one series per metric, keeping only
// numeric values: metrics are strings in the API.
export function metricSeries(history: ProgressSample[]): { xLabel: string; series: MetricSeries[] } {
  const bySteps = history.some((s) => s.step !== undefined);
  const series = new Map<string, MetricSeries>();
  history.forEach((sample, i) => {
    const x = bySteps ? sample.step : i + 1;
    if (x === undefined) return;
    for (const m of sample.metrics ?? []) {
      const y = numeric(m.value);
      if (y === undefined) continue;
      let s = series.get(m.name);
      if (!s) series.set(m.name, (s = { name: m.name, xs: [], ys: [] }));
      s.xs.push(x);
      s.ys.push(y);
    }
  });
  return { xLabel: bySteps ? "step" : "report", series: [...series.values()] };
}

// MetricCharts keeps one chart per metric and updates them in place, so
// that a zoomed chart stays zoomed while points arrive... until the set of
// metrics changes.
export class MetricCharts {
  private charts = new Map<string, uPlot>();

  constructor(private readonly root: HTMLElement) {}

  update(history: ProgressSample[]): void {
    const { xLabel, series } = metricSeries(history);
    const names = series.map((s) => s.name).join("\n");
    if (names !== [...this.charts.keys()].join("\n")) this.rebuild(xLabel, series);
    for (const s of series) {
      const chart = this.charts.get(s.name);
      if (!chart) continue;
      chart.setData([s.xs, s.ys]);
      // The number of points drawn, for tests and tools: the canvas hides it.
      chart.root.parentElement?.setAttribute("data-points", String(s.xs.length));
    }
    if (series.length === 0) replace(this.root, h("p", { class: "empty" }, "No metrics reported."));
  }

  destroy(): void {
    for (const chart of this.charts.values()) chart.destroy();
    this.charts.clear();
  }

  private rebuild(xLabel: string, series: MetricSeries[]): void {
    this.destroy();
    replace(this.root);
    const width = Math.max(320, Math.min(640, this.root.clientWidth || 640));
    for (const s of series) {
      const box = h("figure", { class: "chart", "data-metric": s.name });
      this.root.append(box);
      const chart = new uPlot(
        {
          title: s.name,
          width,
          height: 220,
          scales: { x: { time: false } },
          axes: [{ label: xLabel }, {}],
          series: [{ label: xLabel }, { label: s.name, stroke: "#2563eb", width: 2, points: { show: s.xs.length < 200 } }],
        },
        [s.xs, s.ys],
        box,
      );
      this.charts.set(s.name, chart);
    }
  }
}
