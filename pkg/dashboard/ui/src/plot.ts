// The arithmetic of the searches' charts and tables: reading the API's
// decimal strings, axes and their ticks, and sorting rows by a column. It
// imports nothing, so that test/unit/plot.test.mjs runs it without a
// browser.

// numeric reads a value as the API writes metrics and parameters, a decimal
// string ("0.25", "1e-3"); undefined for an empty or non-numeric one.
export function numeric(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (value.trim() === "") return undefined;
  const v = Number(value);
  return Number.isFinite(v) ? v : undefined;
}

// Scale maps values onto a range of pixels, with the ticks of its axis.
export interface Scale {
  map(value: number): number;
  ticks: number[];
  log: boolean;
}

// niceStep is a step of 1, 2 or 5 times a power of ten that cuts span into
// about count parts.
function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

// linearScale spans values, widened to whole ticks, onto range (which may
// run backwards, as a y axis does). No values, or one, still make an axis.
export function linearScale(values: number[], range: [number, number], count = 5): Scale {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) [lo, hi] = [0, 1];
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    [lo, hi] = [lo - pad, hi + pad];
  }
  const step = niceStep(hi - lo, count);
  lo = Math.floor(lo / step + 1e-9) * step;
  hi = Math.ceil(hi / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let i = 0, t = lo; t <= hi + step * 1e-9 && i < 100; i++, t = lo + i * step) ticks.push(roundTick(t, step));
  const [r0, r1] = range;
  return { map: (v) => r0 + ((v - lo) / (hi - lo)) * (r1 - r0), ticks, log: false };
}

// logScale spans positive values, widened to whole powers of ten, onto
// range, on the logarithm of the value; values at or below 0 have no place
// on it and are left out by the caller.
export function logScale(values: number[], range: [number, number]): Scale {
  const positive = values.filter((v) => v > 0);
  let lo = Math.floor(Math.log10(Math.min(...positive)));
  let hi = Math.ceil(Math.log10(Math.max(...positive)));
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) [lo, hi] = [0, 1];
  if (lo === hi) hi = lo + 1;
  // At most about six labelled powers.
  const every = Math.ceil((hi - lo) / 6);
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e += every) ticks.push(Number(`1e${e}`));
  const [r0, r1] = range;
  return { map: (v) => r0 + ((Math.log10(v) - lo) / (hi - lo)) * (r1 - r0), ticks, log: true };
}

// roundTick drops the float noise of lo + i*step (0.30000000000000004).
function roundTick(t: number, step: number): number {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  return Number(t.toFixed(Math.min(20, decimals)));
}

// tickLabel writes a tick short: 0.001, 1e-5, 25000, 1.5e+6.
export function tickLabel(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e6) return String(Number(v.toPrecision(4)));
  return Number(v.toPrecision(3)).toExponential();
}

// Cell is what a table's column sorts by; undefined and "" are missing.
export type Cell = number | string | undefined;

// compareCells orders two present cells: as numbers when both read as
// numbers, else as text with its digits as numbers ("trial-9" before
// "trial-10").
export function compareCells(a: Cell, b: Cell): number {
  const x = numeric(a);
  const y = numeric(b);
  if (x !== undefined && y !== undefined) return x < y ? -1 : x > y ? 1 : 0;
  if (x !== undefined) return -1;
  if (y !== undefined) return 1;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// sortRows sorts rows by a column, descending or not; rows missing the cell
// come last either way, and equal ones keep their order.
export function sortRows<T>(rows: readonly T[], cell: (row: T) => Cell, descending: boolean): T[] {
  const keyed = rows.map((row, i) => ({ row, i, c: cell(row) }));
  const missing = (c: Cell) => c === undefined || c === "";
  keyed.sort((a, b) => {
    const ma = missing(a.c);
    const mb = missing(b.c);
    if (ma !== mb) return ma ? 1 : -1;
    if (!ma) {
      const c = compareCells(a.c, b.c);
      if (c !== 0) return descending ? -c : c;
    }
    return a.i - b.i;
  });
  return keyed.map((k) => k.row);
}

// polylinePoints is an SVG polyline's points attribute.
export function polylinePoints(points: [number, number][]): string {
  return points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
}
