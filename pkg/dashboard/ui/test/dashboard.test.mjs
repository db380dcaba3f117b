// The dashboard in a real browser: Debian's Chromium, driven by
// playwright-core, against kubectl training dashboard on a local stack
// (hack/test-dashboard.sh starts both the stack and this test, and gives it
// KUBECONFIG and REPO_ROOT). Run with node --test.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const repo = process.env.REPO_ROOT;
assert.ok(repo && process.env.KUBECONFIG, "run through hack/test-dashboard.sh: REPO_ROOT and KUBECONFIG are unset");
const kubectl = join(repo, "_output/bin/kubectl");
const plugin = join(repo, "_output/bin/kubectl-training");
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
// This machine's network is closed: without these, Chromium tries Google's
// services at every start, and is refused many times over.
const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const namespace = "default";
const jobName = "dashboard-e2e";
const rowSelector = `tr[data-job="${namespace}/pytorchtrainingjobs/${jobName}"]`;

// A job the kwok nodes run: its one pod exits 0 after a few seconds, so
// that the list sees it go from not finished to Succeeded.
const succeedingJob = `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ${jobName}
  namespace: ${namespace}
spec:
  replicaSpecs:
  - type: master
    replicas: 1
    template:
      metadata:
        annotations:
          kwok.tensorstack.dev/exit-code: "0"
          kwok.tensorstack.dev/run-duration: "8s"
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          command: ["python", "train.py"]
`;

const invalidJob = `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: dashboard-e2e-invalid
  namespace: ${namespace}
spec:
  replicaSpecs:
  - type: worker
    replicas: -1
    template:
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
`;

let dashboard;
let browser;
let page;
let profile;
const pageErrors = [];

before(async () => {
  dashboard = spawn(plugin, ["dashboard", "--no-browser"], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    dashboard.stdout.on("data", (chunk) => {
      out += chunk;
      const found = out.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=\S+/);
      if (found) resolve(found[0]);
    });
    dashboard.on("exit", (code) => reject(new Error(`kubectl training dashboard exited with ${code}: ${out}`)));
  });
  profile = mkdtempSync(join(tmpdir(), "dashboard-chromium-"));
  browser = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath, headless: true, args: chromiumArgs });
  page = browser.pages()[0] ?? (await browser.newPage());
  // Script errors and Content-Security-Policy violations fail the run. Other
  // console errors do not: Chromium logs every refused request (the 422
  // below) as one.
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && /Content Security Policy/i.test(m.text()) && pageErrors.push(m.text()));
  await page.goto(url);
  await page.waitForSelector("#jobs");
});

after(async () => {
  await browser?.close();
  dashboard?.kill("SIGTERM");
  if (profile) rmSync(profile, { recursive: true, force: true });
  try {
    execFileSync(kubectl, ["delete", "pytorchtrainingjobs", jobName, "-n", namespace, "--ignore-not-found", "--wait=false"]);
  } catch {
    // The stack stops after the test anyway.
  }
});

test("the sign-in leaves no token in the address", () => {
  assert.doesNotMatch(page.url(), /token=/);
});

test("the list shows a new job and turns it Succeeded without a reload", async () => {
  await page.waitForFunction(() => document.getElementById("list-state")?.textContent !== "Loading…");
  // A reload would lose this.
  await page.evaluate(() => {
    window.__sameDocument = true;
  });
  execFileSync(kubectl, ["create", "-f", "-"], { input: succeedingJob });

  const row = page.locator(rowSelector);
  await row.waitFor({ timeout: 30_000 });
  const firstPhase = await row.getAttribute("data-phase");
  assert.notEqual(firstPhase, "Succeeded", "the job showed up already finished: the test saw no change");

  await page.waitForSelector(`${rowSelector}[data-phase="Succeeded"]`, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was reloaded");
});

test("the job page shows the job's conditions, replicas, attempts and spec", async () => {
  await page.locator(`${rowSelector} a`).click();
  await page.waitForFunction(() => document.getElementById("job-phase")?.textContent === "Succeeded", null, { timeout: 30_000 });
  // Completed is True once the job is terminal (the API contract).
  await page.waitForSelector('#conditions li[data-condition="Completed"].status-True');
  await page.waitForSelector(`#replicas tr[data-replica="${jobName}-master-0"]`);
  // Its one attempt, ended by the job's success (status.attempts).
  await page.waitForSelector('#attempts tr[data-attempt="1"][data-reason="Succeeded"]');
  const yaml = await page.locator("#yaml").textContent();
  assert.match(yaml, /kind: PyTorchTrainingJob/);
  assert.match(yaml, /name: dashboard-e2e/);
});

test("create from YAML shows the 422 naming the field", async () => {
  await page.locator("#nav-create").click();
  await page.locator("#create-yaml").fill(invalidJob);
  await page.locator("#create-submit").click();
  const result = page.locator("#create-result.refused");
  await result.waitFor({ timeout: 30_000 });
  const text = await result.textContent();
  assert.match(text, /^422 Invalid/);
  assert.match(text, /spec\.replicaSpecs\[0\]\.replicas/);
});

test("no script error or Content-Security-Policy violation", () => {
  assert.deepEqual(pageErrors, []);
});
