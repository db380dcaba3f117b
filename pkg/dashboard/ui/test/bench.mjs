// The dashboard's benchmark, run by hack/bench-dashboard.sh on a stack of its
// own: BENCH_JOBS paused jobs in the list and one job page with a full
// progress history, each rendered BENCH_RUNS times in Debian's Chromium, the
// list beside its floor (the same rows as static HTML in the same browser),
// and the dashboard server's memory with every job watched. Prints a
// markdown table and writes it to BENCH_OUT.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubectl, kubectlRun, launchBrowser, sleep, startDashboard } from "./harness.mjs";

const jobs = Number(process.env.BENCH_JOBS ?? 1000);
const runs = Number(process.env.BENCH_RUNS ?? 5);
const namespace = "default";

function job(name, paused) {
  return {
    apiVersion: "batch.tensorstack.dev/v1beta1",
    kind: "PyTorchTrainingJob",
    metadata: { name, namespace, labels: { bench: "dashboard" } },
    spec: {
      runMode: paused ? { pause: { enabled: true } } : undefined,
      replicaSpecs: [{ type: "master", replicas: 1, template: { spec: { containers: [{ name: "pytorch", image: "busybox", command: ["python", "train.py"] }] } } }],
    },
  };
}

// post sends body to path through the proxy's unix socket and resolves
// once the answer is a 2xx.
function post(socketPath, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
      let answer = "";
      res.on("data", (chunk) => (answer += chunk));
      res.on("end", () => (res.statusCode < 300 ? resolve() : reject(new Error(`POST ${path}: ${res.statusCode} ${answer}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// rss is a process's resident memory in MiB: all of it, its anonymous part
// (the heap, stacks) and its file-backed part (the binary's code and data as
// mapped from the file, shared and reclaimable).
function rss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+) kB`))[1]) / 1024;
  return { total: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
}

// The jobs: created paused, so that no pod starts; a thousand creates through
// kubectl in pages of 100.
const created = Date.now();
for (let i = 0; i < jobs; i += 100) {
  const items = [];
  for (let j = i; j < Math.min(jobs, i + 100); j++) items.push(job(`bench-${String(j).padStart(5, "0")}`, true));
  kubectlRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
}
console.error(`${jobs} jobs created in ${((Date.now() - created) / 1000).toFixed(1)}s`);

// One running job with a long history: BENCH_POINTS reports, every one
// stored (the stack's write interval is 1 ms), sent through kubectl proxy on
// a unix socket rather than a kubectl per report.
const charted = "bench-chart";
const historyPoints = Number(process.env.BENCH_POINTS ?? 2000);
kubectlRun(["create", "-f", "-"], JSON.stringify(job(charted, false)));
const progressPath = `/apis/batch.tensorstack.dev/v1beta1/namespaces/${namespace}/pytorchtrainingjobs/${charted}/progress`;
const socketDir = mkdtempSync(join(tmpdir(), "bench-proxy-"));
const socket = join(socketDir, "proxy.sock");
const proxy = spawn(kubectl, ["proxy", `--unix-socket=${socket}`], { stdio: ["ignore", "ignore", "inherit"] });
try {
  while (!existsSync(socket)) await sleep(50);
  const reported = Date.now();
  for (let step = 1; step <= historyPoints; step++) {
    const body = JSON.stringify({ apiVersion: "batch.tensorstack.dev/v1beta1", kind: "ProgressReport", metadata: { name: charted },
      step, totalSteps: 100000, metrics: [{ name: "loss", value: String(3 / step) }, { name: "accuracy", value: String(1 - 1 / step) }] });
    await post(socket, progressPath, body);
    // More than the interval apart, so that none is held back and replaced.
    await sleep(2);
  }
  console.error(`${historyPoints} progress reports in ${((Date.now() - reported) / 1000).toFixed(1)}s`);
} finally {
  proxy.kill("SIGTERM");
  rmSync(socketDir, { recursive: true, force: true });
}
const points = JSON.parse(kubectlRun(["get", "--raw", progressPath + "history"])).samples.length;
if (points !== historyPoints) throw new Error(`the job's progress history holds ${points} samples, not the ${historyPoints} reported`);


const { proc: dashboard, url } = await startDashboard();
const browser = await launchBrowser("bench");

// The floor: the list's rows as plain HTML, no framework, no data to fetch.
const rows = Array.from({ length: jobs }, (_, i) =>
  `<tr><td><a href="#">bench-${i}</a></td><td>default</td><td>PyTorchTrainingJob</td><td>Paused</td><td></td><td></td><td></td><td>1m</td><td>0</td><td></td><td><button>Resume</button> <button>Delete</button></td></tr>`).join("");
const floorTable = `<table id="jobs"><tbody>${rows}</tbody></table>`;

const listTimes = [];
const floorTimes = [];
const chartTimes = [];
let rssWatching = { total: 0 };
const rssIdle = rss(dashboard.pid);
try {
  for (let run = 0; run < runs; run++) {
    const page = await browser.context.newPage();
    // The list: from navigation to every job's row in the table.
    await page.goto(url);
    await page.waitForFunction((n) => document.querySelectorAll("#jobs tbody tr[data-job]").length >= n, jobs, { timeout: 120_000, polling: "raf" });
    listTimes.push(await page.evaluate(() => performance.now()));
    const now = rss(dashboard.pid);
    if (now.total > rssWatching.total) rssWatching = now;

    // The job page: from the click on its name to its charts drawn, every
    // point of the history on them.
    const start = await page.evaluate(() => performance.now());
    await page.evaluate((name) => {
      location.hash = `#/job/default/pytorchtrainingjobs/${name}`;
    }, charted);
    await page.waitForFunction((n) => document.querySelectorAll(`#charts figure[data-points="${n}"]`).length === 2, points, { timeout: 60_000, polling: "raf" });
    chartTimes.push((await page.evaluate(() => performance.now())) - start);
    await page.close();

    // The floor: the same rows put into a blank page at once, laid out.
    const floor = await browser.context.newPage();
    floorTimes.push(await floor.evaluate((html) => {
      const start = performance.now();
      document.body.innerHTML = html;
      void document.body.offsetHeight;
      return performance.now() - start;
    }, floorTable));
    await floor.close();
  }
} finally {
  await browser.close();
}
const rssAfter = rss(dashboard.pid);
dashboard.kill("SIGTERM");

const table = [
  `Dashboard, ${jobs} jobs, ${runs} runs, medians (headless Debian Chromium, ${new Date().toISOString().slice(0, 10)}):`,
  "",
  "| measure | dashboard | floor | goal |",
  "|---|---|---|---|",
  `| the list: navigation to all ${jobs} rows | ${median(listTimes).toFixed(0)} ms | ${median(floorTimes).toFixed(0)} ms (the rows as HTML into a blank page) | ≤ 1000 ms |`,
  `| a job page: click to its 2 charts of ${points} points | ${median(chartTimes).toFixed(0)} ms | | ≤ 300 ms |`,
  `| the server's RSS, ${jobs} jobs watched (most, while a page was open) | ${rssWatching.total.toFixed(1)} MiB: ` +
    `${rssWatching.anon.toFixed(1)} anonymous, ${rssWatching.file.toFixed(1)} the binary mapped | ` +
    `${rssIdle.total.toFixed(1)} MiB idle before any page: ${rssIdle.anon.toFixed(1)} anonymous, ${rssIdle.file.toFixed(1)} the binary | ≤ 50 MiB |`,
  `| the server's RSS after the pages closed | ${rssAfter.total.toFixed(1)} MiB: ${rssAfter.anon.toFixed(1)} anonymous | | |`,
  "",
  `Every run, in ms: list ${listTimes.map((t) => t.toFixed(0)).join(", ")}; floor ${floorTimes.map((t) => t.toFixed(0)).join(", ")}; ` +
    `job page ${chartTimes.map((t) => t.toFixed(0)).join(", ")}.`,
].join("\n");
console.log(table);
if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, table + "\n");
