// The searches' arithmetic (src/plot.ts) without a browser or a stack:
// node --test test/unit/ (npm run test:unit). The module imports nothing;
// TypeScript's own compiler strips its types here.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

const source = join(dirname(fileURLToPath(import.meta.url)), "../../src/plot.ts");
const { outputText } = ts.transpileModule(readFileSync(source, "utf8"), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
});
const dir = mkdtempSync(join(tmpdir(), "dashboard-plot-"));
writeFileSync(join(dir, "plot.mjs"), outputText);
const plot = await import(pathToFileURL(join(dir, "plot.mjs")).href);
rmSync(dir, { recursive: true, force: true });

test("numeric reads the API's decimal strings and nothing else", () => {
  assert.equal(plot.numeric("0.25"), 0.25);
  assert.equal(plot.numeric("1e-3"), 0.001);
  assert.equal(plot.numeric(" 7 "), 7);
  assert.equal(plot.numeric(3), 3);
  for (const bad of ["", "  ", "NaN", "Infinity", "abc", undefined, Number.NaN]) assert.equal(plot.numeric(bad), undefined, String(bad));
});

test("sortRows: missing cells last either way, numbers as numbers, ties in their order", () => {
  const rows = [
    { n: "a", v: "0.5" },
    { n: "b", v: undefined },
    { n: "c", v: "10" },
    { n: "d", v: "2" },
    { n: "e", v: "" },
    { n: "f", v: "2" },
  ];
  const names = (desc) => plot.sortRows(rows, (r) => r.v, desc).map((r) => r.n).join("");
  assert.equal(names(false), "adfcbe");
  assert.equal(names(true), "cdfabe");
  // Text with numbers in it: trial-9 before trial-10; numbers before text.
  const words = ["trial-10", "adam", "trial-9", "3", "sgd"].map((v) => ({ v }));
  assert.deepEqual(plot.sortRows(words, (r) => r.v, false).map((r) => r.v), ["3", "adam", "sgd", "trial-9", "trial-10"]);
});

test("linearScale widens to whole ticks and maps onto the range, backwards too", () => {
  const s = plot.linearScale([0.12, 0.93], [100, 0]);
  assert.deepEqual(s.ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.equal(s.map(0), 100);
  assert.equal(s.map(1), 0);
  assert.equal(s.map(0.5), 50);
  // One value, or none, still makes an axis around it.
  const one = plot.linearScale([3], [0, 10]);
  assert.ok(one.ticks[0] <= 3 && one.ticks[one.ticks.length - 1] >= 3, JSON.stringify(one.ticks));
  assert.ok(Number.isFinite(one.map(3)));
  const none = plot.linearScale([], [0, 10]);
  assert.deepEqual([none.map(0), none.map(1)], [0, 10]);
});

test("logScale spans whole powers of ten on the logarithm", () => {
  const s = plot.logScale([2e-4, 0.05], [0, 300]);
  assert.equal(s.log, true);
  assert.deepEqual(s.ticks, [1e-4, 1e-3, 1e-2, 1e-1]);
  assert.equal(s.map(1e-4), 0);
  assert.equal(s.map(1e-1), 300);
  assert.ok(Math.abs(s.map(1e-3) - 100) < 1e-9);
  // Values at or below 0 have no place; one power still makes an axis.
  const one = plot.logScale([0, -1, 10], [0, 1]);
  assert.deepEqual(one.ticks, [10, 100]);
  // Many decades: at most about six labels.
  assert.ok(plot.logScale([1e-12, 1e12], [0, 1]).ticks.length <= 7);
});

test("tickLabel writes ticks short", () => {
  assert.equal(plot.tickLabel(0), "0");
  assert.equal(plot.tickLabel(0.2), "0.2");
  assert.equal(plot.tickLabel(0.30000000000000004), "0.3");
  assert.equal(plot.tickLabel(25000), "25000");
  assert.equal(plot.tickLabel(1e-5), "1e-5");
  assert.equal(plot.tickLabel(1500000), "1.5e+6");
});

test("polylinePoints", () => {
  assert.equal(plot.polylinePoints([[1, 2], [3.14159, 4]]), "1.0,2.0 3.1,4.0");
});
