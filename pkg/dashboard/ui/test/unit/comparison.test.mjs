// The comparison's arithmetic (src/comparison.ts) without a browser or a
// stack: node --test test/unit/. It imports plot.ts alone; both are
// transpiled by TypeScript's own compiler, the import pointed at the other.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

const src = join(dirname(fileURLToPath(import.meta.url)), "../../src");
const dir = mkdtempSync(join(tmpdir(), "dashboard-comparison-"));
for (const name of ["plot", "comparison"]) {
  const { outputText } = ts.transpileModule(readFileSync(join(src, `${name}.ts`), "utf8"), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  writeFileSync(join(dir, `${name}.mjs`), outputText.replace(/from "\.\/plot"/, 'from "./plot.mjs"'));
}
const cmp = await import(pathToFileURL(join(dir, "comparison.mjs")).href);
rmSync(dir, { recursive: true, force: true });

function job(name, { startTime, attempts, accounting, replicaSpecs = [], progress } = {}) {
  return {
    apiVersion: "batch.tensorstack.dev/v1beta1",
    kind: "PyTorchTrainingJob",
    metadata: { name, namespace: "ns", uid: name, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { replicaSpecs },
    status: { startTime, attempts, accounting, progress },
  };
}

const sample = (t, step, loss) => ({ reportTime: `2026-01-01T00:00:${String(t).padStart(2, "0")}.000000Z`, step, metrics: [{ name: "loss", value: loss }] });

test("the URL's state reads back as it was written; bad entries and repeats are left out", () => {
  const state = { jobs: [{ namespace: "a", kind: "pytorchtrainingjobs", name: "x" }, { namespace: "b", kind: "pj", name: "y" }], align: "elapsed", metric: "val/loss" };
  const hash = cmp.compareHash(state);
  assert.equal(hash, "#/compare?jobs=a/pytorchtrainingjobs/x,b/pj/y&align=elapsed&metric=val%2Floss");
  assert.deepEqual(cmp.parseCompareQuery(hash.replace("#/compare?", "")), state);
  const odd = cmp.parseCompareQuery("jobs=a/pj/x,,a/x,a/pj/x,a/PJ/x&align=sideways");
  assert.deepEqual(odd, { jobs: [{ namespace: "a", kind: "pj", name: "x" }], align: "step", metric: "" });
});

test("by step a step reported again keeps its last value; by time every report, from the run's start", () => {
  // A resume from step 2's checkpoint reports step 3 again.
  const c = { job: job("x", { startTime: "2026-01-01T00:00:05Z", attempts: [{ number: 1, startTime: "2026-01-01T00:00:02Z" }] }), resource: "pytorchtrainingjobs",
    samples: [sample(3, 1, "3"), sample(4, 2, "2"), sample(5, 3, "1.5"), sample(8, 3, "1.25"), { reportTime: "2026-01-01T00:00:09.000000Z", metrics: [{ name: "acc", value: "0.5" }] }] };
  assert.deepEqual(cmp.alignedSeries(c, "loss", "step"), { xs: [1, 2, 3], ys: [3, 2, 1.25] });
  // The first attempt's start, not the current run's.
  assert.equal(cmp.runStart(c.job, c.samples), Date.parse("2026-01-01T00:00:02Z"));
  assert.deepEqual(cmp.alignedSeries(c, "loss", "elapsed"), { xs: [1, 2, 3, 6], ys: [3, 2, 1.5, 1.25] });
  const wall = cmp.alignedSeries(c, "loss", "time");
  assert.equal(wall.xs[0], Date.parse("2026-01-01T00:00:03Z") / 1000);
  assert.deepEqual(cmp.alignedSeries(c, "acc", "step"), { xs: [], ys: [] }, "a report without a step has no place by step");
  assert.deepEqual(cmp.metricNames([c]), ["loss", "acc"]);
});

test("a hovered x shows each job's latest value at or before it", () => {
  const xs = [1, 2, 4, 8];
  assert.equal(cmp.indexAtOrBefore(xs, 0), -1);
  assert.equal(cmp.indexAtOrBefore(xs, 1), 0);
  assert.equal(cmp.indexAtOrBefore(xs, 5), 2);
  assert.equal(cmp.indexAtOrBefore(xs, 100), 3);
  assert.equal(cmp.indexAtOrBefore([], 1), -1);
});

test("final metrics and run time", () => {
  const c = { job: job("x", { progress: { metrics: [{ name: "acc", value: "0.9" }] }, accounting: { runningSeconds: 42 } }), resource: "r", samples: [sample(1, 1, "2"), sample(2, 2, "1")] };
  assert.deepEqual([...cmp.finalMetrics(c)], [["acc", 0.9], ["loss", 1]]);
  assert.equal(cmp.runSeconds(c, Date.now()), 42);
  const unstarted = { job: job("y"), resource: "r", samples: [] };
  assert.equal(cmp.runSeconds(unstarted, Date.now()), undefined);
});

test("the spec diff shows only the env, args, images and resources that differ", () => {
  const spec = (lr, image, cpu) => [
    {
      type: "worker",
      replicas: 2,
      template: { spec: { containers: [{ name: "pytorch", image, command: ["python", "train.py"], args: ["--lr", lr], env: [{ name: "SEED", value: "1" }, { name: "LR", value: lr }], resources: { limits: { cpu } } }] } },
    },
  ];
  const a = job("a", { replicaSpecs: spec("0.1", "img:1", "1") });
  const b = job("b", { replicaSpecs: spec("0.01", "img:1", "2") });
  const { differences, alike } = cmp.specDiff([a, b]);
  assert.deepEqual(differences.map((d) => d.field), ["worker/pytorch args", "worker/pytorch env LR", "worker/pytorch limits.cpu"]);
  assert.deepEqual(differences[0].values, ['["--lr","0.1"]', '["--lr","0.01"]']);
  assert.equal(alike, 4, "replicas, image, command and SEED are alike");
  const c = job("c", { replicaSpecs: [...spec("0.1", "img:2", "1"), { type: "ps", template: { spec: { containers: [] } } }] });
  const third = cmp.specDiff([a, c]).differences;
  assert.deepEqual(third.map((d) => [d.field, d.values]), [["worker/pytorch image", ["img:1", "img:2"]], ["ps replicas", [undefined, "1"]]]);
});

test("the CSV has a row a report, the Python client's columns, quoted where needed", () => {
  const c = { job: job("x", { startTime: "2026-01-01T00:00:00Z" }), resource: "r", samples: [sample(1, 1, "2.5"), { reportTime: "2026-01-01T00:00:02.000000Z", metrics: [{ name: "other", value: "1" }] }, sample(3, 2, "1.5")] };
  const csv = cmp.comparisonCSV([c], ["loss"]);
  assert.equal(csv, "job,namespace,kind,step,elapsed_seconds,time,loss\r\n" +
    "x,ns,PyTorchTrainingJob,1,1,2026-01-01T00:00:01.000000Z,2.5\r\n" +
    "x,ns,PyTorchTrainingJob,2,3,2026-01-01T00:00:03.000000Z,1.5\r\n");
  assert.match(cmp.comparisonCSV([c], ['a,"b']), /^job,namespace,kind,step,elapsed_seconds,time,"a,""b"\r\n$/);
});
