// The dashboard in Debian's Chromium against a DDP job that trains on the
// stack's real nodes: its bar moves, rank 1's log follows as the lines are
// written, a pause from the page checkpoints and a resume goes on from the
// checkpoint, and the list turns the job Succeeded, all without a reload.
//
// Run by test/e2e (TestRealNodeDashboard), which holds the real nodes, makes
// the namespace and the checkpoint claim, and writes the job's manifest:
// DASHBOARD_NAMESPACE, DASHBOARD_JOB (its name) and DASHBOARD_JOB_MANIFEST
// (its path). The tests run in order, each going on from the one before.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { getJSON, kubectlRun, launchBrowser, repo, startDashboard, watchPageErrors } from "./harness.mjs";

const namespace = process.env.DASHBOARD_NAMESPACE;
const jobName = process.env.DASHBOARD_JOB;
const manifest = process.env.DASHBOARD_JOB_MANIFEST;
assert.ok(namespace && jobName && manifest, "DASHBOARD_NAMESPACE, DASHBOARD_JOB and DASHBOARD_JOB_MANIFEST must be set (test/e2e sets them)");
const resource = "pytorchtrainingjobs";
const row = `tr[data-job="${namespace}/${resource}/${jobName}"]`;
// The DDP example prints "rank=R step=N loss=L at=T" at every step, T its
// node's clock in seconds; the nodes are on this machine, so T and the
// browser's clock are one clock.
const stepLine = /^rank=(\d+) step=(\d+) loss=\S+ at=([0-9.]+)$/;
// How late a log line may reach the page (the issue's bound).
const maxLogLatencyMs = 2000;

const screenshots = resolve(repo, process.env.DASHBOARD_SCREENSHOTS || "_output/dashboard-screenshots");
mkdirSync(screenshots, { recursive: true });

let dashboard;
let browser;
let page;
const pageErrors = [];

before(async () => {
  let url;
  ({ proc: dashboard, url } = await startDashboard());
  browser = await launchBrowser("dashboard-real");
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  watchPageErrors(page, pageErrors);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(url);
  await page.waitForFunction(() => document.getElementById("list-state")?.textContent !== "Loading…");
  // A reload would lose this.
  await page.evaluate(() => {
    window.__sameDocument = true;
  });
});

after(async () => {
  await browser?.close();
  dashboard?.kill("SIGTERM");
});

// followLog picks a replica's log in the page and resolves once the page
// follows it.
async function followLog(replica) {
  const target = `${jobName}-${replica}/pytorch`;
  await page.waitForSelector(`#log-pod option[value="${target}"]`, { state: "attached", timeout: 60_000 });
  await page.selectOption("#log-pod", target);
  await page.waitForFunction((t) => document.getElementById("log-state")?.textContent === `following ${t}`, target);
}

test("the list shows the DDP job training, its progress bar moving", async () => {
  kubectlRun(["apply", "-f", manifest]);
  await page.locator(row).waitFor({ timeout: 30_000 });
  await page.waitForSelector(`${row}[data-phase="Running"]`, { timeout: 180_000 });
  const value = () => page.locator(`${row} progress`).getAttribute("value").then(Number);
  await page.waitForFunction((sel) => Number(document.querySelector(sel)?.getAttribute("value")) > 0, `${row} progress`, { timeout: 120_000 });
  const first = await value();
  await page.waitForFunction(([sel, v]) => Number(document.querySelector(sel)?.getAttribute("value")) > v, [`${row} progress`, first], { timeout: 60_000 });
  const later = await value();
  assert.ok(later > first, `the bar stood at ${first}`);
});

test("the live log shows rank 1's lines within 2 s of their writing", async () => {
  await page.locator(`${row} a`).click();
  await followLog("node-1");
  // Each step line of rank 1 that comes after the page began to follow, with
  // the time the page showed it. The tail the log starts with is older.
  const since = Date.now() / 1000;
  await page.evaluate(() => {
    window.__seen = new Map();
    const output = document.getElementById("log-output");
    const record = () => {
      for (const line of output.textContent.split("\n")) if (!window.__seen.has(line)) window.__seen.set(line, Date.now());
    };
    new MutationObserver(record).observe(output, { childList: true, characterData: true, subtree: true });
    record();
  });
  await page.waitForFunction(
    ([pattern, t]) => [...window.__seen.keys()].filter((l) => new RegExp(pattern).test(l) && Number(l.match(/at=([0-9.]+)$/)[1]) > t).length >= 5,
    [stepLine.source, since],
    { timeout: 60_000 },
  );
  const seen = await page.evaluate(() => [...window.__seen.entries()]);
  const latencies = [];
  for (const [line, shownAt] of seen) {
    const m = line.match(stepLine);
    if (!m || Number(m[3]) <= since) continue;
    assert.equal(m[1], "1", `a line of another rank in rank 1's log: ${line}`);
    latencies.push({ step: Number(m[2]), ms: shownAt - Number(m[3]) * 1000 });
  }
  const worst = Math.max(...latencies.map((l) => l.ms));
  console.log(`rank 1's log lines reached the page ${latencies.map((l) => `${l.ms.toFixed(0)} ms`).join(", ")} after their writing`);
  assert.ok(worst <= maxLogLatencyMs, `a line of rank 1 reached the page ${worst.toFixed(0)} ms after its writing: ${JSON.stringify(latencies)}`);
  await page.screenshot({ path: join(screenshots, "dashboard-real-job.png"), fullPage: true });
});

test("pause from the page checkpoints, and resume goes on from the checkpoint", async () => {
  await page.locator('button[data-action="pause"]').first().click();
  await page.waitForSelector("#action-result.ok", { timeout: 15_000 });
  await page.waitForFunction(() => document.getElementById("job-phase")?.textContent === "Paused", null, { timeout: 120_000 });
  const paused = getJSON(resource, jobName, namespace);
  const step = paused.status.checkpoint?.latest?.step;
  assert.ok(step > 0, `no checkpoint written for the pause: ${JSON.stringify(paused.status.checkpoint)}`);
  // The page shows the checkpoint the pause wrote.
  await page.waitForSelector(`#checkpoints tr[data-step="${step}"]`, { timeout: 15_000 });

  await page.locator('button[data-action="resume"]').first().click();
  await page.waitForFunction(() => document.getElementById("job-phase")?.textContent === "Running", null, { timeout: 180_000 });
  // The second attempt resumed from that checkpoint, and rank 0's log says
  // so, then trains the step after it.
  await page.waitForSelector(`#attempts tr[data-attempt="2"][data-resumed-from="${step}"]`, { timeout: 60_000 });
  await followLog("node-0");
  await page.waitForFunction(
    (s) => {
      const text = document.getElementById("log-output")?.textContent ?? "";
      return text.includes(`rank=0 resumed from step=${s} `) && text.includes(`rank=0 step=${s + 1} `);
    },
    step,
    { timeout: 120_000 },
  );
});

test("the list turns the job Succeeded without a reload", async () => {
  await page.evaluate(() => {
    location.hash = "#/";
  });
  await page.waitForSelector(`${row}[data-phase="Succeeded"]`, { timeout: 180_000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was reloaded");
});

test("no script error or Content-Security-Policy violation", () => {
  assert.deepEqual(pageErrors, []);
});
