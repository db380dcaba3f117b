// The dashboard's benchmark, run by hack/bench-dashboard.sh on a stack of its
// own: BENCH_JOBS paused jobs in the list, one job page with a full
// progress history, a comparison of BENCH_COMPARE jobs of as many reports
// each and the Queues page of BENCH_QUEUES ClusterQueues and BENCH_PENDING
// pending Workloads and the History of BENCH_RECORDS records of deleted jobs,
// each rendered BENCH_RUNS times in Debian's Chromium, the
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
// The compared jobs: paused, so that no pod starts (a paused job takes
// reports), each with a history as long as the charted job's.
const comparedCount = Number(process.env.BENCH_COMPARE ?? 10);
const compared = Array.from({ length: comparedCount }, (_, i) => `bench-compare-${String(i).padStart(2, "0")}`);
kubectlRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: compared.map((name) => job(name, true)) }));
const socketDir = mkdtempSync(join(tmpdir(), "bench-proxy-"));
const socket = join(socketDir, "proxy.sock");
const proxy = spawn(kubectl, ["proxy", `--unix-socket=${socket}`], { stdio: ["ignore", "ignore", "inherit"] });
try {
  while (!existsSync(socket)) await sleep(50);
  const reported = Date.now();
  // Each job's reports one after the other, the jobs at once: the stack
  // holds back a job's report that comes within its write interval.
  const reportAll = async (name, scale) => {
    const path = progressPath.replace(`/${charted}/`, `/${name}/`);
    for (let step = 1; step <= historyPoints; step++) {
      const body = JSON.stringify({ apiVersion: "batch.tensorstack.dev/v1beta1", kind: "ProgressReport", metadata: { name },
        step, totalSteps: 100000, metrics: [{ name: "loss", value: String((3 * scale) / step) }, { name: "accuracy", value: String(1 - scale / step) }] });
      await post(socket, path, body);
      // More than the interval apart, so that none is held back and replaced.
      await sleep(2);
    }
  };
  await Promise.all([reportAll(charted, 1), ...compared.map((name, i) => reportAll(name, 1 + i / comparedCount))]);
  console.error(`${historyPoints} progress reports to each of ${1 + comparedCount} jobs in ${((Date.now() - reported) / 1000).toFixed(1)}s`);
} finally {
  proxy.kill("SIGTERM");
  rmSync(socketDir, { recursive: true, force: true });
}
const points = JSON.parse(kubectlRun(["get", "--raw", progressPath + "history"])).samples.length;
if (points !== historyPoints) throw new Error(`the job's progress history holds ${points} samples, not the ${historyPoints} reported`);
for (const name of compared) {
  const held = JSON.parse(kubectlRun(["get", "--raw", progressPath.replace(`/${charted}/`, `/${name}/`) + "history"])).samples.length;
  if (held !== historyPoints) throw new Error(`${name}'s progress history holds ${held} samples, not the ${historyPoints} reported`);
}
// The queues: BENCH_QUEUES ClusterQueues of no quota, a LocalQueue each, and
// BENCH_PENDING Workloads spread over them, which wait for ever. Workloads
// made directly, as a job's controller would make them, in pages of 100.
const queueCount = Number(process.env.BENCH_QUEUES ?? 50);
const pendingCount = Number(process.env.BENCH_PENDING ?? 1000);
const queuesMade = Date.now();
const queueObjects = [];
for (let i = 0; i < queueCount; i++) {
  const name = `bench-queue-${String(i).padStart(2, "0")}`;
  queueObjects.push(
    { apiVersion: "kueue.x-k8s.io/v1beta2", kind: "ClusterQueue", metadata: { name }, spec: { namespaceSelector: {}, resourceGroups: [
      { coveredResources: ["nvidia.com/gpu"], flavors: [{ name: "default-flavor", resources: [{ name: "nvidia.com/gpu", nominalQuota: 0 }] }] }] } },
    { apiVersion: "kueue.x-k8s.io/v1beta2", kind: "LocalQueue", metadata: { name, namespace }, spec: { clusterQueue: name } },
  );
}
kubectlRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: queueObjects }));
for (let i = 0; i < pendingCount; i += 100) {
  const items = [];
  for (let j = i; j < Math.min(pendingCount, i + 100); j++) {
    items.push({ apiVersion: "kueue.x-k8s.io/v1beta2", kind: "Workload", metadata: { name: `bench-wl-${String(j).padStart(5, "0")}`, namespace },
      spec: { queueName: `bench-queue-${String(j % queueCount).padStart(2, "0")}`, podSets: [{ name: "main", count: 1, template: { spec: {
        restartPolicy: "Never", containers: [{ name: "c", image: "busybox", resources: { requests: { "nvidia.com/gpu": "1" }, limits: { "nvidia.com/gpu": "1" } } }] } } }] } });
  }
  kubectlRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
}
console.error(`${queueCount} ClusterQueues and ${pendingCount} pending Workloads created in ${((Date.now() - queuesMade) / 1000).toFixed(1)}s`);

// The History: BENCH_RECORDS records of deleted jobs, spread over
// BENCH_RECORD_NAMESPACES namespaces (the apiserver keeps 1,000 a namespace
// by default). Each job is made paused and deleted at once, which writes its
// record; BENCH_RECORD_CONCURRENCY jobs at a time, through kubectl proxy on a
// unix socket rather than a kubectl per request.
const recordCount = Number(process.env.BENCH_RECORDS ?? 10000);
const recordNamespaces = Number(process.env.BENCH_RECORD_NAMESPACES ?? 10);
const recordConcurrency = Number(process.env.BENCH_RECORD_CONCURRENCY ?? 8);
const recordNamespaceNames = Array.from({ length: recordNamespaces }, (_, i) => `bench-history-${String(i).padStart(2, "0")}`);
// call sends a request through the proxy's unix socket and resolves once
// the answer is a 2xx.
function call(socketPath, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method, headers: { "Content-Type": "application/json" } }, (res) => {
      let answer = "";
      res.on("data", (chunk) => (answer += chunk));
      res.on("end", () => (res.statusCode < 300 ? resolve() : reject(new Error(`${method} ${path}: ${res.statusCode} ${answer}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}
const recordsMade = Date.now();
kubectlRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List",
  items: recordNamespaceNames.map((name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } })) }));
const recordProxyDir = mkdtempSync(join(tmpdir(), "bench-proxy-"));
const recordSocket = join(recordProxyDir, "proxy.sock");
const recordProxy = spawn(kubectl, ["proxy", `--unix-socket=${recordSocket}`], { stdio: ["ignore", "ignore", "inherit"] });
try {
  while (!existsSync(recordSocket)) await sleep(50);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < recordCount; i = next++) {
      const ns = recordNamespaceNames[i % recordNamespaces];
      const name = `bench-deleted-${String(i).padStart(5, "0")}`;
      const made = job(name, true);
      made.metadata.namespace = ns;
      made.metadata.labels = { bench: "history" };
      const jobs = `/apis/batch.tensorstack.dev/v1beta1/namespaces/${ns}/pytorchtrainingjobs`;
      await call(recordSocket, "POST", jobs, JSON.stringify(made));
      await call(recordSocket, "DELETE", `${jobs}/${name}`, "");
      if ((i + 1) % 1000 === 0) console.error(`${i + 1} jobs created and deleted, ${((Date.now() - recordsMade) / 1000).toFixed(1)}s`);
    }
  };
  await Promise.all(Array.from({ length: recordConcurrency }, worker));
} finally {
  recordProxy.kill("SIGTERM");
  rmSync(recordProxyDir, { recursive: true, force: true });
}
const recordsHeld = kubectlRun(["get", "trainingjobrecords", "--all-namespaces", "--no-headers"]).split("\n").filter((l) => l.trim()).length;
if (recordsHeld !== recordCount) throw new Error(`the API keeps ${recordsHeld} records, not the ${recordCount} of the jobs deleted`);
console.error(`${recordCount} jobs created and deleted, their records written, in ${((Date.now() - recordsMade) / 1000).toFixed(1)}s`);

const compareHash = `#/compare?jobs=${compared.map((name) => `${namespace}/pytorchtrainingjobs/${name}`).join(",")}&align=step`;


const { proc: dashboard, url } = await startDashboard();
const browser = await launchBrowser("bench");

// The floor: the list's rows as plain HTML, no framework, no data to fetch.
const rows = Array.from({ length: jobs }, (_, i) =>
  `<tr><td><input type="checkbox"></td><td><a href="#">bench-${i}</a></td><td>default</td><td>PyTorchTrainingJob</td><td>Paused</td><td></td><td></td><td></td><td>1m</td><td>0</td><td></td><td><button>Resume</button> <button>Delete</button></td></tr>`).join("");
const floorTable = `<table id="jobs"><tbody>${rows}</tbody></table>`;

const listTimes = [];
const floorTimes = [];
const chartTimes = [];
const compareTimes = [];
const queuesTimes = [];
const historyTimes = [];
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

    // The comparison: from its address to its 2 charts drawn, a line a job
    // and every point of each.
    const compareStart = await page.evaluate(() => performance.now());
    await page.evaluate((hash) => {
      location.hash = hash;
    }, compareHash);
    await page.waitForFunction(
      ([lines, n]) => document.querySelectorAll(`#compare-charts figure[data-lines="${lines}"][data-points="${n}"]`).length === 2,
      [comparedCount, comparedCount * points],
      { timeout: 60_000, polling: "raf" },
    );
    compareTimes.push((await page.evaluate(() => performance.now())) - compareStart);

    // The Queues page: from its address to every pending Workload's row.
    const queuesStart = await page.evaluate(() => performance.now());
    await page.evaluate(() => {
      location.hash = "#/queues";
    });
    await page.waitForFunction((n) => document.querySelectorAll("section.cluster-queue tr[data-workload]").length >= n, pendingCount, { timeout: 60_000, polling: "raf" });
    queuesTimes.push((await page.evaluate(() => performance.now())) - queuesStart);

    // The History: from its address to the count of every record and the
    // first page of rows drawn.
    const historyStart = await page.evaluate(() => performance.now());
    await page.evaluate(() => {
      location.hash = "#/history";
    });
    await page.waitForFunction(
      (n) => document.getElementById("history-count")?.getAttribute("data-total") === String(n) && document.querySelectorAll("#history tbody tr[data-record]").length > 0,
      recordCount,
      { timeout: 60_000, polling: "raf" },
    );
    historyTimes.push((await page.evaluate(() => performance.now())) - historyStart);
    const withHistory = rss(dashboard.pid);
    if (withHistory.total > rssWatching.total) rssWatching = withHistory;
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
  `| a comparison of ${comparedCount} jobs of ${points} points each: its address to its 2 charts of ${comparedCount} lines | ${median(compareTimes).toFixed(0)} ms | | ≤ 500 ms |`,
  `| the Queues page: its address to ${queueCount} ClusterQueues and all ${pendingCount} pending Workloads' rows | ${median(queuesTimes).toFixed(0)} ms | | ≤ 1000 ms |`,
  `| the History: its address to the count of all ${recordCount} records of deleted jobs (${recordNamespaces} namespaces) and its first page of rows | ${median(historyTimes).toFixed(0)} ms | | ≤ 1000 ms |`,
  `| the server's RSS, ${jobs} jobs watched, the ${recordCount} records listed (most, while a page was open) | ${rssWatching.total.toFixed(1)} MiB: ` +
    `${rssWatching.anon.toFixed(1)} anonymous, ${rssWatching.file.toFixed(1)} the binary mapped | ` +
    `${rssIdle.total.toFixed(1)} MiB idle before any page: ${rssIdle.anon.toFixed(1)} anonymous, ${rssIdle.file.toFixed(1)} the binary | ≤ 64 MiB |`,
  `| the server's RSS after the pages closed | ${rssAfter.total.toFixed(1)} MiB: ${rssAfter.anon.toFixed(1)} anonymous | | |`,
  "",
  `Every run, in ms: list ${listTimes.map((t) => t.toFixed(0)).join(", ")}; floor ${floorTimes.map((t) => t.toFixed(0)).join(", ")}; ` +
    `job page ${chartTimes.map((t) => t.toFixed(0)).join(", ")}; comparison ${compareTimes.map((t) => t.toFixed(0)).join(", ")}; ` +
    `queues ${queuesTimes.map((t) => t.toFixed(0)).join(", ")}; history ${historyTimes.map((t) => t.toFixed(0)).join(", ")}.`,
].join("\n");
console.log(table);
if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, table + "\n");
