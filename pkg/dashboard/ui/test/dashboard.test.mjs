// The dashboard in a real browser: Debian's Chromium, driven by
// playwright-core, against kubectl training dashboard on a local stack
// (hack/test-dashboard.sh starts both the stack and this test, and gives it
// KUBECONFIG and REPO_ROOT). Run with node --test.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { kubectlRun, launchBrowser, repo, sleep, startDashboard, watchPageErrors } from "./harness.mjs";

const namespace = "default";
const jobName = "dashboard-e2e";
const rowSelector = `tr[data-job="${namespace}/pytorchtrainingjobs/${jobName}"]`;

// kwokJob is a one-master job for the kwok nodes. exit, when set, is the
// exit code its pod ends with after runFor; without it the pod runs until
// deleted. runPolicy is YAML for spec.runPolicy, indented by four.
function kwokJob(name, { exit, runFor = "8s", runPolicy = "" } = {}) {
  const annotations =
    exit === undefined
      ? ""
      : `
      metadata:
        annotations:
          kwok.tensorstack.dev/exit-code: "${exit}"
          kwok.tensorstack.dev/run-duration: "${runFor}"`;
  return `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ${name}
  namespace: ${namespace}
spec:${runPolicy ? `\n  runPolicy:\n${runPolicy}` : ""}
  replicaSpecs:
  - type: master
    replicas: 1
    template:${annotations}
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          command: ["python", "train.py"]
`;
}

// A job whose one pod exits 0 after a few seconds, so that the list sees it
// go from not finished to Succeeded.
const succeedingJob = kwokJob(jobName, { exit: 0 });

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

// The job the runtime form makes, from the shipped torch-distributed: its
// pods go to kwok nodes, so only its creation and its page are looked at.
const runtimeJobName = "dashboard-from-runtime";
// The command as typed, and the words it must become.
const runtimeCommand = `python3 train.py --note "two words" --lr '0.1'`;
const runtimeCommandWords = ["python3", "train.py", "--note", "two words", "--lr", "0.1"];

// waitForShippedRuntime waits for the runtime the apiserver installs once
// it serves (a post-start hook): the stack may answer before it has.
async function waitForShippedRuntime(name) {
  for (let i = 0; ; i++) {
    try {
      kubectlRun(["get", "clustertrainingruntimes", name, "-o", "name"]);
      return;
    } catch (e) {
      if (i >= 60) throw e;
      await sleep(1000);
    }
  }
}

// A job whose pod runs until deleted, for the test to report progress for,
// pause and resume.
const runningJobName = "dashboard-progress";
const runningJob = kwokJob(runningJobName);
const runningRow = `tr[data-job="${namespace}/pytorchtrainingjobs/${runningJobName}"]`;

// A job whose master exits 3 after two seconds, every time: its failure
// rule restarts the whole job twice (backoffLimit 2), and the third failure
// ends it. Three attempts, each ended with its reason.
const restartedJobName = "dashboard-restarted";
const restartedJob = kwokJob(restartedJobName, {
  exit: 3,
  runFor: "2s",
  runPolicy: `    backoffLimit: 2
    failurePolicy:
      rules:
      - action: RestartJob
        onExitCodes: {operator: In, values: [3]}`,
});

// An elastic job of two workers, between one and four, whose pods run
// until deleted: the page scales it and debugs it.
const elasticJobName = "dashboard-elastic";
const elasticJob = `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ${elasticJobName}
  namespace: ${namespace}
spec:
  torchrunConfig: {enabled: true}
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4, expectedReplicas: 2}
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          command: ["python", "train.py"]
`;

// The losses the test reports, one per step: values uPlot prints as they
// are written.
const losses = ["2.5", "1.75", "1.25", "0.875", "0.625", "0.5"];

// report posts a progress report for the job, as its pods would.
function report(name, step, loss) {
  const body = JSON.stringify({
    apiVersion: "batch.tensorstack.dev/v1beta1",
    kind: "ProgressReport",
    metadata: { name },
    step,
    totalSteps: 10,
    metrics: [{ name: "loss", value: loss }],
  });
  kubectlRun(["create", "--raw", `/apis/batch.tensorstack.dev/v1beta1/namespaces/${namespace}/pytorchtrainingjobs/${name}/progress`, "-f", "-"], body);
}

// A search of two trials on the kwok nodes, whose pods run until deleted:
// the test reports each trial's loss, as its training code would.
const searchName = "dashboard-search";
const searchTrials = [`${searchName}-0`, `${searchName}-1`];
const search = `apiVersion: batch.tensorstack.dev/v1beta1
kind: TuningJob
metadata:
  name: ${searchName}
  namespace: ${namespace}
spec:
  parameters:
  - {name: lr, type: double, min: "0.0001", max: "1", logScale: true}
  objective: {metric: loss, direction: minimize}
  algorithm: {name: random, seed: 3}
  parallelTrials: 2
  maxTrials: 2
  trialTemplate:
    pytorch:
      replicaSpecs:
      - type: master
        replicas: 1
        template:
          spec:
            containers:
            - name: pytorch
              image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
              command: ["python", "train.py", "--lr", "\${param.lr}"]
`;

// waitUntil checks every second until check() holds, for at most timeout
// milliseconds.
async function waitUntil(what, check, timeout) {
  for (const end = Date.now() + timeout; !check(); await sleep(1000)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

// Where the tests leave their screenshots: _output, unless
// DASHBOARD_SCREENSHOTS names another directory. docs/dashboard.md and the
// README show the ones in docs/images, refreshed on purpose with
// DASHBOARD_SCREENSHOTS=docs/images.
const screenshots = resolve(repo, process.env.DASHBOARD_SCREENSHOTS || "_output/dashboard-screenshots");
mkdirSync(screenshots, { recursive: true });

let dashboard;
let viewerDashboard;
let viewerKubeconfig;
let browser;
let page;
const pageErrors = [];

before(async () => {
  let url;
  ({ proc: dashboard, url } = await startDashboard({}));
  browser = await launchBrowser("dashboard");
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  watchPageErrors(page, pageErrors);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(url);
  await page.waitForSelector("#jobs");
});

after(async () => {
  await browser?.close();
  dashboard?.kill("SIGTERM");
  viewerDashboard?.kill("SIGTERM");
  if (viewerKubeconfig) rmSync(viewerKubeconfig, { force: true });
  try {
    kubectlRun(["delete", "pytorchtrainingjobs", jobName, runningJobName, restartedJobName, elasticJobName, runtimeJobName, "-n", namespace, "--ignore-not-found", "--wait=false"]);
    kubectlRun(["delete", "pytorchtrainingjobs", ...compareJobs.map((j) => j.name), "-n", namespace, "--ignore-not-found", "--wait=false"]);
    kubectlRun(["delete", "pytorchtrainingjobs", suspectJobName, "-n", namespace, "--ignore-not-found", "--wait=false"]);
    kubectlRun(["delete", "pytorchtrainingjobs", historyJobName, "-n", namespace, "--ignore-not-found", "--wait=false"]);
    kubectlRun(["delete", "tuningjobs", searchName, "-n", namespace, "--ignore-not-found", "--wait=false"]);
    kubectlRun(["delete", "rolebinding,role", "dashboard-viewer", "-n", namespace, "--ignore-not-found"]);
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
  kubectlRun(["create", "-f", "-"], succeedingJob);

  const row = page.locator(rowSelector);
  await row.waitFor({ timeout: 30_000 });
  const firstPhase = await row.getAttribute("data-phase");
  assert.notEqual(firstPhase, "Succeeded", "the job showed up already finished: the test saw no change");

  await page.waitForSelector(`${rowSelector}[data-phase="Succeeded"]`, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was reloaded");
});

test("the kind filter offers the kinds the API serves, and filters by them", async () => {
  // The API's own list of the group's job resources, not the dashboard's:
  // those of the trainingjobs category (searches are no jobs).
  const served = kubectlRun(["api-resources", "--api-group=batch.tensorstack.dev", "--categories=trainingjobs", "--no-headers", "-o", "name"])
    .split("\n")
    .filter((name) => name.trim() !== "").length;
  const kinds = await page.locator("#filter-kind option").evaluateAll((options) => options.map((o) => o.value).filter(Boolean));
  assert.equal(kinds.length, served, `the filter offers ${kinds.join(", ")}; the API serves ${served} kinds`);
  assert.ok(kinds.includes("PyTorchTrainingJob"), `no PyTorchTrainingJob among ${kinds.join(", ")}`);

  const other = kinds.find((k) => k !== "PyTorchTrainingJob");
  await page.locator("#filter-kind").selectOption(other);
  await page.locator(rowSelector).waitFor({ state: "detached", timeout: 10_000 });
  await page.locator("#filter-kind").selectOption("PyTorchTrainingJob");
  await page.locator(rowSelector).waitFor({ timeout: 10_000 });
  await page.locator("#filter-kind").selectOption("");
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

test("a job from a runtime: the form offers the shipped runtimes, shows the 422 for no nodes, creates the job and opens its page", async () => {
  await waitForShippedRuntime("torch-distributed");
  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  await page.locator("#nav-run").click();
  const torch = "ClusterTrainingRuntime/torch-distributed";
  await page.locator(`#run-runtime option[value="${torch}"]`).waitFor({ state: "attached", timeout: 15_000 });

  // Every ClusterTrainingRuntime the API has, with its scope and the kind it
  // makes: the API's own list, not the dashboard's.
  const offered = await page.locator("#run-runtime option").allTextContents();
  const installed = kubectlRun(["get", "clustertrainingruntimes", "-o", "jsonpath={.items[*].metadata.name}"]).split(/\s+/).filter(Boolean);
  assert.ok(installed.length >= 5, `the stack has the runtimes ${installed.join(", ")}: not the shipped ones`);
  for (const name of installed) {
    const option = offered.find((o) => o.startsWith(`${name} (Cluster, `));
    assert.ok(option, `no option for ${name} among ${JSON.stringify(offered)}`);
    assert.match(option, /\(Cluster, \w+\)$/, `${name}: no kind the dashboard knows`);
  }
  assert.ok(offered.includes("torch-distributed (Cluster, PyTorchTrainingJob)"), JSON.stringify(offered));

  // Every input is found by its label.
  await page.getByLabel("Runtime", { exact: true }).selectOption(torch);
  assert.match(await page.locator("#run-runtime-info").textContent(), /PyTorchTrainingJob of master, worker/);
  await page.getByLabel("Name", { exact: true }).fill(runtimeJobName);
  await page.getByLabel("Namespace", { exact: true }).fill(namespace);
  await page.getByLabel("CPU per node", { exact: true }).fill("1");
  await page.getByLabel("Memory per node", { exact: true }).fill("1Gi");
  await page.getByLabel("GPUs per node", { exact: true }).fill("");
  await page.getByLabel("Command", { exact: true }).fill(runtimeCommand);
  await page.getByLabel("Environment", { exact: true }).fill("LR=0.01\nEPOCHS=3");

  // No nodes: the form sends it as it is, and shows the API's 422.
  await page.getByLabel("Nodes", { exact: true }).fill("0");
  await page.locator("#run-submit").click();
  const refused = page.locator("#run-result.refused");
  await refused.waitFor({ timeout: 30_000 });
  const text = await refused.textContent();
  assert.match(text, /^422 Invalid/);
  assert.match(text, /spec\.trainer\.numNodes/);
  assert.equal(kubectlRun(["get", "pytorchtrainingjobs", runtimeJobName, "-n", namespace, "--ignore-not-found", "-o", "name"]).trim(), "",
    "the refused job exists");

  await page.getByLabel("Nodes", { exact: true }).fill("2");
  await page.locator("#run-submit").click();
  const link = page.locator("#run-result.ok a");
  await link.waitFor({ timeout: 30_000 });
  assert.equal(await link.textContent(), `${namespace}/${runtimeJobName}`);

  // The job as the API stored it: the form's runtimeRef and trainer, and the
  // runtime applied.
  const job = JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", runtimeJobName, "-n", namespace, "-o", "json"]));
  assert.deepEqual(job.spec.runtimeRef, { name: "torch-distributed", kind: "ClusterTrainingRuntime" });
  assert.deepEqual(job.spec.trainer.command, runtimeCommandWords);
  assert.equal(job.spec.trainer.numNodes, 2);
  assert.deepEqual(job.spec.trainer.env, [{ name: "LR", value: "0.01" }, { name: "EPOCHS", value: "3" }]);
  assert.deepEqual(job.spec.trainer.resourcesPerNode, { requests: { cpu: "1", memory: "1Gi" }, limits: { cpu: "1", memory: "1Gi" } });
  const types = job.spec.replicaSpecs.map((r) => r.type);
  assert.deepEqual(types, ["master", "worker"], "the runtime's replica types were not applied");
  assert.equal(job.spec.replicaSpecs.reduce((n, r) => n + r.replicas, 0), 2, "numNodes did not size the nodes");
  const container = job.spec.replicaSpecs[0].template.spec.containers.find((c) => c.name === "pytorch");
  assert.deepEqual(container.args, runtimeCommandWords, "the command is not the training container's args");

  // The link opens the job's page.
  await link.click();
  await page.waitForSelector("#job-phase", { timeout: 30_000 });
  await page.waitForFunction(() => /runtimeRef:/.test(document.getElementById("yaml")?.textContent ?? ""), null, { timeout: 30_000 });
  assert.match(await page.locator("#yaml").textContent(), /name: torch-distributed/);
  assert.match(page.url(), new RegExp(`#/job/${namespace}/pytorchtrainingjobs/${runtimeJobName}$`));
});

test("progress moves the list's bar live, and the job page charts every reported step", async () => {
  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  kubectlRun(["create", "-f", "-"], runningJob);
  const row = page.locator(runningRow);
  await row.waitFor({ timeout: 30_000 });
  await page.waitForSelector(`${runningRow}[data-phase="Running"]`, { timeout: 60_000 });
  await page.evaluate(() => {
    window.__sameDocument = true;
  });

  // The stack stores a job's reports at most once a second
  // (--progress-write-interval=1s): one report a step, 1.2 s apart, keeps
  // each in the history.
  const bar = page.locator(`${runningRow} progress`);
  const values = [];
  for (let i = 0; i < losses.length; i++) {
    report(runningJobName, i + 1, losses[i]);
    await page.waitForFunction(
      ([sel, want]) => Number(document.querySelector(sel)?.getAttribute("value")) === want,
      [`${runningRow} progress`, (i + 1) * 10],
      { timeout: 15_000 },
    );
    values.push(Number(await bar.getAttribute("value")));
    await sleep(1200);
  }
  assert.deepEqual(values, [10, 20, 30, 40, 50, 60], "the bar did not follow the reports");
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was reloaded");
  await page.screenshot({ path: join(screenshots, "dashboard-list.png") });

  await page.locator(`${runningRow} a`).click();
  const chart = page.locator('#charts figure[data-metric="loss"]');
  await page.waitForSelector(`#charts figure[data-metric="loss"][data-points="${losses.length}"]`, { timeout: 30_000 });

  // Hovering a point shows its value in the chart's legend.
  const over = chart.locator(".u-over");
  const box = await over.boundingBox();
  assert.ok(box, "the chart has no plotting area");
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
  const value = chart.locator(".u-legend .u-series:nth-child(2) .u-value");
  await page.waitForFunction((el) => el && el.textContent.trim() !== "" && el.textContent.trim() !== "--", await value.elementHandle(), { timeout: 5_000 });
  assert.equal((await value.textContent()).trim(), losses[losses.length - 1], "the hovered value is not the last step's loss");
  await page.mouse.move(box.x + 1, box.y + box.height / 2);
  await page.waitForFunction((el) => el.textContent.trim() === "2.5", await value.elementHandle(), { timeout: 5_000 });
  await page.screenshot({ path: join(screenshots, "dashboard-job.png"), fullPage: true });
});

test("pause and resume from the job page", async () => {
  // Still on the running job's page.
  await page.locator('button[data-action="pause"]').first().click();
  await page.waitForSelector("#action-result.ok", { timeout: 15_000 });
  await page.waitForFunction(() => document.getElementById("job-phase")?.textContent === "Paused", null, { timeout: 60_000 });
  const spec = JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", runningJobName, "-n", namespace, "-o", "json"]));
  assert.equal(spec.spec.runMode?.pause?.enabled, true, "the page said paused, the API did not");

  await page.locator('button[data-action="resume"]').first().click();
  await page.waitForFunction(() => document.getElementById("job-phase")?.textContent === "Running", null, { timeout: 60_000 });
});

test("scale an elastic job from its page, and a count past its bounds shows the 422", async () => {
  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  kubectlRun(["create", "-f", "-"], elasticJob);
  const row = `tr[data-job="${namespace}/pytorchtrainingjobs/${elasticJobName}"]`;
  await page.locator(row).waitFor({ timeout: 30_000 });
  await page.locator(`${row} a`).click();
  await page.waitForSelector(`#replicas tr[data-replica="${elasticJobName}-worker-1"]`, { timeout: 60_000 });

  await page.locator(".scale-replicas").fill("3");
  await page.locator('button[data-action="scale"]').click();
  await page.waitForSelector("#action-result.ok", { timeout: 15_000 });
  await page.waitForSelector(`#replicas tr[data-replica="${elasticJobName}-worker-2"]`, { timeout: 60_000 });
  const scaled = JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", elasticJobName, "-n", namespace, "-o", "json"]));
  assert.equal(scaled.spec.elastic.expectedReplicas, 3);

  await page.locator(".scale-replicas").fill("9");
  await page.locator('button[data-action="scale"]').click();
  const refused = page.locator("#action-result.refused");
  await refused.waitFor({ timeout: 15_000 });
  assert.match(await refused.textContent(), /422/);
});

test("debug from the job page, and resume ends it", async () => {
  // Still on the elastic job's page.
  await page.locator('button[data-action="debug"]').click();
  await page.waitForFunction(() => document.getElementById("action-result")?.textContent?.endsWith("done"), null, { timeout: 15_000 });
  const debugged = JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", elasticJobName, "-n", namespace, "-o", "json"]));
  assert.equal(debugged.spec.runMode?.debug?.enabled, true, "the page said done, the job is not in debug mode");

  // The page follows the job: debug mode offers resume.
  await page.locator('button[data-action="resume"]').click();
  await page.waitForFunction(() => document.querySelector('button[data-action="pause"]') !== null, null, { timeout: 15_000 });
  const resumed = JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", elasticJobName, "-n", namespace, "-o", "json"]));
  assert.notEqual(resumed.spec.runMode?.debug?.enabled, true, "resume left the job in debug mode");
});

test("a job restarted twice by a failure rule shows three attempts, each with its reason", async () => {
  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  kubectlRun(["create", "-f", "-"], restartedJob);
  const row = `tr[data-job="${namespace}/pytorchtrainingjobs/${restartedJobName}"]`;
  await page.locator(row).waitFor({ timeout: 30_000 });
  await page.locator(`${row} a`).click();
  await page.waitForFunction(() => document.getElementById("job-phase")?.textContent === "Failed", null, { timeout: 120_000 });
  for (const n of [1, 2, 3]) {
    await page.waitForSelector(`#attempts tr[data-attempt="${n}"]`, { timeout: 15_000 });
  }
  const reasons = await page.$$eval("#attempts tr[data-attempt]", (rows) =>
    rows.map((r) => [r.getAttribute("data-attempt"), r.getAttribute("data-reason")]),
  );
  // Newest first; the first two ended with the restart, the last with the
  // job's failure.
  assert.equal(reasons.length, 3, `attempts shown: ${JSON.stringify(reasons)}`);
  assert.deepEqual(reasons.map(([n]) => n), ["3", "2", "1"]);
  for (const [n, reason] of reasons) assert.notEqual(reason, "", `attempt ${n} shows no reason`);
  assert.notEqual(reasons[0][1], reasons[1][1], "the last attempt ended as the restarted ones did");
  // Each attempt names its failed replica, exit code 3.
  const failed = await page.$$eval("#attempts details[data-failed] > summary", (rows) => rows.map((r) => r.textContent));
  assert.equal(failed.length, 3, `failed replicas shown: ${JSON.stringify(failed)}`);
  for (const text of failed) assert.match(text, /\(exit 3\)/);
});

test("a search's page: the trials sorted by a clicked header, the best marked, their curves, the loss by lr on a log axis", async () => {
  kubectlRun(["create", "-f", "-"], search);
  for (const trial of searchTrials) {
    await waitUntil(`${trial} running`, () =>
      kubectlRun(["get", "pytorchtrainingjobs", trial, "-n", namespace, "--ignore-not-found", "-o", "jsonpath={.status.phase}"]).trim() === "Running", 90_000);
  }
  // Three steps each, 1.2 s apart (the stack keeps one report a second):
  // the second trial's loss the lower, so the best.
  for (let step = 1; step <= 3; step++) {
    report(searchTrials[0], step, String(2 - step * 0.25));
    report(searchTrials[1], step, String(1.5 - step * 0.25));
    await sleep(1200);
  }

  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  await page.locator("#nav-tuning").click();
  const row = page.locator(`#searches tr[data-search="${namespace}/${searchName}"]`);
  await row.waitFor({ timeout: 30_000 });
  await row.locator("a").click();
  // The page reads the search every 5 s: the trials' values come as the
  // controller takes in the reports.
  await page.waitForSelector(`#trials-table tr[data-best="true"][data-trial="${searchTrials[1]}"]`, { timeout: 60_000 });
  const best = kubectlRun(["get", "tuningjobs", searchName, "-n", namespace, "-o", "jsonpath={.status.bestTrial}"]).trim();
  assert.equal(best, searchTrials[1], "the page marks a best trial the API does not name");
  assert.equal(await page.locator(`#trials-table tr[data-trial="${searchTrials[0]}"] a`).getAttribute("href"),
    `#/job/${namespace}/pytorchtrainingjobs/${searchTrials[0]}`);

  // Best first, then by any clicked header, which turns the order when
  // clicked again.
  const order = () => page.$$eval("#trials-table tbody tr", (rows) => rows.map((r) => r.getAttribute("data-trial")));
  assert.deepEqual(await order(), [searchTrials[1], searchTrials[0]]);
  await page.locator('#trials-table th[data-column="trial"]').click();
  assert.deepEqual(await order(), searchTrials);
  assert.equal(await page.locator('#trials-table th[data-column="trial"]').getAttribute("aria-sort"), "ascending");
  await page.locator('#trials-table th[data-column="trial"]').click();
  assert.deepEqual(await order(), [searchTrials[1], searchTrials[0]]);
  assert.equal(await page.locator('#trials-table th[data-column="trial"]').getAttribute("aria-sort"), "descending");
  await page.locator('#trials-table th[data-column="param:lr"]').click();
  assert.equal(await page.locator('#trials-table th[data-column="param:lr"]').getAttribute("aria-sort"), "ascending");

  // A curve a trial, of the points reported; the lr chart on a log axis,
  // a point a trial.
  await page.waitForFunction(
    (n) => [...document.querySelectorAll("#curves-chart [data-trial]")].filter((c) => Number(c.getAttribute("data-points")) >= 2).length === n,
    searchTrials.length,
    { timeout: 30_000 },
  );
  assert.match(await page.locator('#curves-legend li[data-legend="promoted"]').textContent(), /\(0\)/);
  await page.waitForSelector('#parameters figure[data-parameter="lr"][data-scale="log"][data-points="2"]', { timeout: 30_000 });
  await page.screenshot({ path: join(screenshots, "dashboard-search.png"), fullPage: true });
});

// Three jobs to compare, running on the kwok nodes until deleted: the same
// image and command, another learning rate in args and env each, the third
// with more CPU; each reports its own losses.
const compareJobs = [
  { name: "dashboard-compare-a", lr: "0.1", cpu: "1", losses: ["2.5", "2", "1.5", "1"] },
  { name: "dashboard-compare-b", lr: "0.01", cpu: "1", losses: ["3", "2.75", "2.5", "2.25"] },
  { name: "dashboard-compare-c", lr: "0.001", cpu: "2", losses: ["4", "3", "2", "1"] },
];

function compareJob({ name, lr, cpu }) {
  return `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  replicaSpecs:
  - type: master
    replicas: 1
    template:
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          command: ["python", "train.py"]
          args: ["--lr", "${lr}"]
          env:
          - {name: LR, value: "${lr}"}
          - {name: SEED, value: "7"}
          resources:
            limits: {cpu: "${cpu}"}
`;
}

// legendValues is each job's value in the legend of a comparison's chart,
// by job.
function legendValues(figure) {
  return figure.locator("ul.compare-legend li").evaluateAll((items) =>
    Object.fromEntries(items.map((li) => [li.getAttribute("data-job"), li.querySelector(".value")?.textContent ?? ""])));
}

test("three jobs compared: a line each on every chart, each one's hovered value, the spec diff, the CSV, the state in the URL", async () => {
  for (const j of compareJobs) kubectlRun(["create", "-f", "-"], compareJob(j));
  for (const j of compareJobs) {
    await waitUntil(`${j.name} running`, () =>
      kubectlRun(["get", "pytorchtrainingjobs", j.name, "-n", namespace, "-o", "jsonpath={.status.phase}"]).trim() === "Running", 90_000);
  }
  // A step a report, 1.2 s apart: the stack keeps one report a second.
  for (let step = 1; step <= 4; step++) {
    for (const j of compareJobs) report(j.name, step, j.losses[step - 1]);
    await sleep(1200);
  }

  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  for (const j of compareJobs) {
    const box = page.locator(`input[data-select="${namespace}/pytorchtrainingjobs/${j.name}"]`);
    await box.waitFor({ timeout: 30_000 });
    await box.check();
  }
  await page.locator("#compare-selected").click();
  await page.waitForURL(/#\/compare\?jobs=/);
  for (const j of compareJobs) assert.ok(page.url().includes(`${namespace}/pytorchtrainingjobs/${j.name}`), `${j.name} is not in ${page.url()}`);

  // Three lines, each of its four steps.
  const figure = page.locator('#compare-charts figure[data-metric="loss"]');
  await page.waitForSelector('#compare-charts figure[data-metric="loss"][data-lines="3"][data-points="12"]', { timeout: 30_000 });
  assert.equal(await figure.locator("ul.compare-legend li").count(), 3);

  // Hovering the first step shows every job's first loss; the last, its last.
  const over = figure.locator(".u-over");
  const box = await over.boundingBox();
  assert.ok(box, "the chart has no plotting area");
  const expect = (i) => Object.fromEntries(compareJobs.map((j) => [`${namespace}/${j.name}`, j.losses[i]]));
  await page.mouse.move(box.x + 2, box.y + box.height / 2);
  await page.waitForFunction(() => document.querySelector("#compare-charts ul.compare-legend li .at")?.textContent === "(step 1)", null, { timeout: 5_000 });
  assert.deepEqual(await legendValues(figure), expect(0), "the hovered values are not each job's first loss");
  await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
  await page.waitForFunction(() => document.querySelector("#compare-charts ul.compare-legend li .at")?.textContent === "(step 4)", null, { timeout: 5_000 });
  assert.deepEqual(await legendValues(figure), expect(3), "the hovered values are not each job's last loss");
  await page.screenshot({ path: join(screenshots, "dashboard-compare.png"), fullPage: true });

  // The final figures: a row a job, its last loss.
  for (const j of compareJobs) {
    const cell = page.locator(`#compare-summary-table tr[data-job="${namespace}/${j.name}"] td[data-metric="loss"]`);
    assert.equal((await cell.textContent()).trim(), j.losses[3]);
  }
  // The spec diff: args, LR and the CPU differ; the image, command and SEED
  // are alike and not shown.
  const fields = await page.$$eval("#compare-diff-table tbody tr", (rows) => rows.map((r) => r.getAttribute("data-field")));
  assert.deepEqual(fields.sort(), ["master/pytorch args", "master/pytorch env LR", "master/pytorch limits.cpu"]);

  // The CSV: a row a report.
  const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#compare-csv").click()]);
  const csv = readFileSync(await download.path(), "utf8").trim().split(/\r?\n/);
  assert.equal(csv[0], "job,namespace,kind,step,elapsed_seconds,time,loss");
  assert.equal(csv.length, 1 + 12, `the CSV: ${csv.join(" | ")}`);
  for (const j of compareJobs) {
    const rows = csv.filter((line) => line.startsWith(`${j.name},`));
    assert.deepEqual(rows.map((line) => line.split(",").at(-1)), j.losses, `${j.name}'s rows: ${rows.join(" | ")}`);
  }

  // Aligned by time since start: the address says so, and a reload shows
  // the same comparison.
  await page.locator("#compare-align").selectOption("elapsed");
  await page.waitForURL(/align=elapsed/);
  const address = page.url();
  await page.reload();
  await page.waitForSelector('#compare-charts figure[data-metric="loss"][data-lines="3"][data-points="12"]', { timeout: 30_000 });
  assert.equal(page.url(), address);
  assert.equal(await page.locator("#compare-align").inputValue(), "elapsed");
  // The hovered x now reads as the time since the job started.
  const elapsed = await page.locator('#compare-charts figure[data-metric="loss"] .u-over').boundingBox();
  await page.mouse.move(elapsed.x + elapsed.width - 2, elapsed.y + elapsed.height / 2);
  await page.waitForFunction(() => / in\)$/.test(document.querySelector("#compare-charts ul.compare-legend li .at")?.textContent ?? ""), null, { timeout: 5_000 });
  assert.deepEqual(await legendValues(figure), expect(3), "by time since start, the right edge is not each job's last loss");

  // From a search's trials table: its two trials side by side.
  await page.goto(page.url().replace(/#.*$/, "") + `#/tuning/${namespace}/${searchName}`);
  for (const trial of searchTrials) {
    const tick = page.locator(`#trials-table input[data-select="${namespace}/pytorchtrainingjobs/${trial}"]`);
    await tick.waitFor({ timeout: 30_000 });
    await tick.check();
  }
  await page.locator("#compare-selected").click();
  await page.waitForSelector('#compare-charts figure[data-metric="loss"][data-lines="2"]', { timeout: 30_000 });
  // Their pods go, leaving the kwok nodes to the tests after.
  kubectlRun(["delete", "pytorchtrainingjobs", ...compareJobs.map((j) => j.name), "-n", namespace, "--wait=false"]);
});

// A job of two GPUs, one CPU and 1 GiB whose pod runs until deleted; exit
// code 79 blames the node. The test makes its first pod exit 79, so that the
// job names that node suspect and its next pod runs on another.
const suspectJobName = "dashboard-suspect";
const suspectJob = `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ${suspectJobName}
  namespace: ${namespace}
spec:
  runPolicy:
    nodeFailureExitCodes: [79]
  replicaSpecs:
  - type: master
    replicas: 1
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          command: ["python", "train.py"]
          resources:
            limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "2"}
`;

// suspectJobPods are the job's pods that have not terminated: name, node,
// phase.
function suspectJobPods() {
  const pods = JSON.parse(kubectlRun(["get", "pods", "-n", namespace, "-l", `batch.tensorstack.dev/job-name=${suspectJobName}`, "-o", "json"]));
  return pods.items
    .filter((p) => !p.metadata.deletionTimestamp && p.status.phase !== "Succeeded" && p.status.phase !== "Failed")
    .map((p) => ({ name: p.metadata.name, node: p.spec.nodeName, phase: p.status.phase }));
}

test("the cluster page: every node with its allocatable, the jobs on it, and the node a job named suspect", async () => {
  kubectlRun(["create", "-f", "-"], suspectJob);
  let first;
  await waitUntil(`${suspectJobName}'s pod running`, () => (first = suspectJobPods().find((p) => p.phase === "Running")), 90_000);
  kubectlRun(["annotate", "pod", first.name, "-n", namespace, "kwok.tensorstack.dev/exit-code=79", "kwok.tensorstack.dev/run-duration=100ms"]);
  const suspects = () =>
    JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", suspectJobName, "-n", namespace, "-o", "json"])).status.suspectNodes ?? [];
  await waitUntil(`${first.node} suspect`, () => suspects().some((n) => n.name === first.node), 90_000);
  let next;
  await waitUntil(`${suspectJobName}'s next pod running`, () =>
    (next = suspectJobPods().find((p) => p.phase === "Running" && p.node !== first.node)), 90_000);

  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  await page.locator("#nav-cluster").click();
  await page.waitForSelector("#cluster-nodes tbody tr", { timeout: 30_000 });

  // Every node the API lists, each with its allocatable.
  const nodes = JSON.parse(kubectlRun(["get", "nodes", "-o", "json"])).items;
  const rows = await page.$$eval("#cluster-nodes tbody tr[data-node]", (trs) => trs.map((tr) => tr.getAttribute("data-node")));
  assert.deepEqual(rows.sort(), nodes.map((n) => n.metadata.name).sort());
  for (const node of nodes) {
    const gpus = node.status.allocatable["nvidia.com/gpu"];
    assert.ok(gpus, `${node.metadata.name} has no nvidia.com/gpu`);
    const cell = await page.locator(`#cluster-nodes tr[data-node="${node.metadata.name}"] td[data-resource="nvidia.com/gpu"]`).textContent();
    assert.match(cell, new RegExp(`/ ${gpus}$`), `${node.metadata.name}'s GPUs`);
  }

  // The job's pod holds two of its node's GPUs, and the node links the job.
  const row = page.locator(`#cluster-nodes tr[data-node="${next.node}"]`);
  const link = row.locator(`li[data-job="${namespace}/pytorchtrainingjobs/${suspectJobName}"] a`);
  assert.equal(await link.getAttribute("href"), `#/job/${namespace}/pytorchtrainingjobs/${suspectJobName}`);
  assert.match(await row.locator('td[data-resource="nvidia.com/gpu"]').textContent(), /^\s*2 \//);

  // The node the first pod failed on is marked, with the job and why.
  const mark = page.locator(
    `#cluster-nodes tr[data-node="${first.node}"][data-suspect="true"] li[data-suspect-by="${namespace}/pytorchtrainingjobs/${suspectJobName}"]`,
  );
  assert.equal(await mark.getAttribute("data-reason"), "NodeFailureExitCode");
  await page.screenshot({ path: join(screenshots, "dashboard-cluster.png"), fullPage: true });

  await link.click();
  await page.waitForSelector(`#suspect-nodes li[data-node="${first.node}"]`, { timeout: 30_000 });
});

// A job for the History, whose pod runs until the test makes it exit 3: its
// failure rule restarts the job, so that its record keeps two attempts, the
// first ended by the restart with its failed replica. It comes before the
// viewer's tests: the viewer's dashboard, on another port of the same host,
// replaces the page's session cookie (cookies know no ports).
const historyJobName = "dashboard-history";
const historyJob = kwokJob(historyJobName, {
  runPolicy: `    backoffLimit: 2
    failurePolicy:
      rules:
      - action: RestartJob
        onExitCodes: {operator: In, values: [3]}`,
});
const historyLosses = ["3", "2.25", "1.5", "1.125"];

// jobStatus is the job's status as the API has it now.
function jobStatus(name) {
  return JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", name, "-n", namespace, "-o", "json"])).status ?? {};
}

test("the History: a deleted job's record opens with its attempts, charts and events", async () => {
  kubectlRun(["create", "-f", "-"], historyJob);
  await waitUntil(`${historyJobName} running`, () => jobStatus(historyJobName).phase === "Running", 90_000);
  // A step a report, 1.2 s apart: the stack keeps one report a second.
  for (let i = 0; i < historyLosses.length; i++) {
    report(historyJobName, i + 1, historyLosses[i]);
    await sleep(1200);
  }
  // The first attempt's pod exits 3: the job restarts, a second attempt.
  const running = () =>
    JSON.parse(kubectlRun(["get", "pods", "-n", namespace, "-l", `batch.tensorstack.dev/job-name=${historyJobName}`, "-o", "json"])).items.find(
      (p) => !p.metadata.deletionTimestamp && p.status.phase === "Running",
    );
  let pod;
  await waitUntil(`${historyJobName}'s pod running`, () => (pod = running()), 60_000);
  kubectlRun(["annotate", "pod", pod.metadata.name, "-n", namespace, "kwok.tensorstack.dev/exit-code=3", "kwok.tensorstack.dev/run-duration=100ms"]);
  await waitUntil(`${historyJobName}'s second attempt`, () => (jobStatus(historyJobName).attempts ?? []).length >= 2, 90_000);

  kubectlRun(["delete", "pytorchtrainingjobs", historyJobName, "-n", namespace, "--wait=true", "--timeout=60s"]);
  const recordOf = () =>
    JSON.parse(kubectlRun(["get", "trainingjobrecords", "-n", namespace, "-l", `batch.tensorstack.dev/job-name=${historyJobName}`, "-o", "json"])).items[0];
  let record;
  await waitUntil(`${historyJobName}'s record`, () => (record = recordOf()), 30_000);

  // The History lists it, with the jobs list's filters.
  await page.goto(page.url().replace(/#.*$/, "") + "#/");
  await page.locator("#nav-history").click();
  const row = page.locator(`#history tr[data-job="${namespace}/${historyJobName}"]`);
  try {
    await row.waitFor({ timeout: 30_000 });
  } catch (e) {
    const says = await page.locator("main").innerText();
    throw new Error(`no row for ${historyJobName}'s record: the page says ${JSON.stringify(says.slice(0, 2000))}`, { cause: e });
  }
  assert.equal(await row.getAttribute("data-record"), `${namespace}/${record.metadata.name}`);
  assert.equal(await row.locator("td").nth(2).textContent(), "PyTorchTrainingJob");
  assert.match(await row.locator("td").nth(6).textContent(), /^\d+\w* ago$/);
  await page.locator("#history-filter-phase").selectOption("Succeeded");
  await row.waitFor({ state: "detached", timeout: 10_000 });
  await page.locator("#history-filter-phase").selectOption(record.phase || "Pending");
  await page.locator("#history-filter-name").fill(historyJobName);
  await page.locator("#history-filter-name").press("Enter");
  await row.waitFor({ timeout: 10_000 });
  await page.screenshot({ path: join(screenshots, "dashboard-history.png") });

  // Its page: the job as it was, read-only, with what it ran.
  await row.locator("a").click();
  await page.waitForSelector("#record-banner #record-deleted", { timeout: 30_000 });
  assert.match(await page.locator("#record-banner").textContent(), /The record of a deleted job/);
  assert.equal(await page.locator("#record-left-out").getAttribute("data-left-out"), (record.leftOut ?? []).join(","));
  assert.equal(await page.locator("#job-phase").textContent(), record.phase);
  assert.equal(await page.locator('button[data-action="pause"], button[data-action="resume"], button[data-action="delete"]').count(), 0,
    "the record's page offers actions on the job");
  assert.equal(await page.locator("#logs").count(), 0, "the record's page follows logs");
  // A line of the reported points.
  await page.waitForSelector(`#charts figure[data-metric="loss"][data-points="${historyLosses.length}"]`, { timeout: 10_000 });
  // Both attempts; the first ended by the restart, its replica's exit 3.
  await page.waitForSelector('#attempts tr[data-attempt="2"]');
  const first = page.locator('#attempts tr[data-attempt="1"]');
  assert.notEqual(await first.getAttribute("data-reason"), "", "the first attempt shows no reason");
  assert.match(await first.locator("details[data-failed] > summary").first().textContent(), /\(exit 3\)/);
  assert.ok(await page.locator("#conditions li[data-condition]").count() > 0, "no conditions shown");
  // The events the record keeps, a row each.
  assert.equal(await page.locator("#events tbody tr").count(), (record.events ?? []).length);
  assert.match(await page.locator("#yaml").textContent(), new RegExp(`name: ${historyJobName}`));
  await page.screenshot({ path: join(screenshots, "dashboard-record.png"), fullPage: true });
});

test("a user who may only get and list sees the jobs and is refused pause with the 403's message", async () => {
  kubectlRun(["apply", "-f", "-"], `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: dashboard-viewer
  namespace: ${namespace}
rules:
- apiGroups: [batch.tensorstack.dev]
  resources: [pytorchtrainingjobs, tensorflowtrainingjobs]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: dashboard-viewer
  namespace: ${namespace}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: dashboard-viewer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dashboard-viewer}
`);
  // The admin's kubeconfig, acting as the viewer (impersonation): the
  // dashboard uses whatever credentials its kubeconfig gives.
  const config = JSON.parse(kubectlRun(["config", "view", "--raw", "--minify", "-o", "json"]));
  for (const u of config.users) u.user.as = "dashboard-viewer";
  viewerKubeconfig = join(tmpdir(), `dashboard-viewer-${process.pid}.kubeconfig`);
  writeFileSync(viewerKubeconfig, JSON.stringify(config), { mode: 0o600 });
  let url;
  ({ proc: viewerDashboard, url } = await startDashboard({ KUBECONFIG: viewerKubeconfig }));

  const viewer = await browser.context.newPage();
  watchPageErrors(viewer, pageErrors);
  await viewer.goto(url);
  const row = viewer.locator(runningRow);
  await row.waitFor({ timeout: 30_000 });
  await row.locator('button[data-action="pause"]').click();
  const refused = viewer.locator("#action-result.refused");
  await refused.waitFor({ timeout: 15_000 });
  const text = await refused.textContent();
  assert.match(text, /403/);
  assert.match(text, /dashboard-viewer/);
  assert.match(text, /pytorchtrainingjobs\/pause/);
  const spec = JSON.parse(kubectlRun(["get", "pytorchtrainingjobs", runningJobName, "-n", namespace, "-o", "json"]));
  assert.notEqual(spec.spec.runMode?.pause?.enabled, true, "the refused pause paused the job");
  await viewer.close();
});

test("a user who may not list nodes sees the API's 403 on the cluster page", async () => {
  // The viewer of the test before: its Role names no nodes.
  const { proc, url } = await startDashboard({ KUBECONFIG: viewerKubeconfig });
  try {
    const viewer = await browser.context.newPage();
    watchPageErrors(viewer, pageErrors);
    await viewer.goto(url);
    await viewer.waitForSelector("#jobs");
    await viewer.locator("#nav-cluster").click();
    const refused = viewer.locator("#cluster-state.refused");
    await refused.waitFor({ timeout: 15_000 });
    const text = await refused.textContent();
    assert.match(text, /^403 Forbidden/);
    assert.match(text, /dashboard-viewer/);
    assert.match(text, /cannot list resource "nodes"/);
    assert.equal(await viewer.locator("#cluster-nodes").count(), 0, "the refused page shows a table of nodes");
    await viewer.close();
  } finally {
    proc.kill("SIGTERM");
  }
});

// A ClusterQueue with room for one job (one GPU), its LocalQueue, and two
// one-GPU jobs in it whose pods run until deleted: the first is admitted,
// the second waits, first in line, until the first is deleted.
const queueName = "dashboard-one-gpu";
const queuedJobs = ["dashboard-queued-a", "dashboard-queued-b"];
const oneGPUQueue = `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: ${queueName}
spec:
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: default-flavor
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 1
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: ${queueName}
  namespace: ${namespace}
spec:
  clusterQueue: ${queueName}
`;

function queuedJob(name) {
  return `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ${name}
  namespace: ${namespace}
  labels:
    kueue.x-k8s.io/queue-name: ${queueName}
spec:
  replicaSpecs:
  - type: master
    replicas: 1
    template:
      spec:
        containers:
        - name: pytorch
          image: docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          command: ["python", "train.py"]
          resources:
            limits: {nvidia.com/gpu: 1}
`;
}

test("a queue's pending order changes live when a job is admitted (two jobs, a quota of one)", async () => {
  const [first, second] = queuedJobs;
  const queueSection = `section.cluster-queue[data-cluster-queue="${queueName}"]`;
  // A job's Workload is named after its kind's short name and the job.
  const pendingRow = (job) => `${queueSection} tr[data-workload="${namespace}/pj-${job}"]`;
  // A session of its own: the shared page's has been through every test
  // before, and what they left open is not this test's to count.
  const { proc: ownDashboard, url: ownURL } = await startDashboard({});
  const page = await browser.context.newPage();
  watchPageErrors(page, pageErrors);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(ownURL);
  await page.waitForSelector("#jobs");
  try {
    kubectlRun(["apply", "-f", "-"], oneGPUQueue);
    kubectlRun(["wait", "--for=condition=Active", `clusterqueue/${queueName}`, "--timeout=60s"]);
    kubectlRun(["create", "-f", "-"], queuedJob(first));
    await waitUntil(`${first}'s Workload admitted`, () => {
      try {
        return kubectlRun(["get", "workloads.kueue.x-k8s.io", `pj-${first}`, "-n", namespace, "-o",
          'jsonpath={.status.conditions[?(@.type=="Admitted")].status}']).trim() === "True";
      } catch {
        return false;
      }
    }, 60_000);
    kubectlRun(["create", "-f", "-"], queuedJob(second));

    // The Queues page: one admitted, the second first in line with Kueue's reason.
    await page.goto(page.url().replace(/#.*$/, "") + "#/queues");
    try {
      await page.waitForSelector(`${pendingRow(second)}[data-position="1"]`, { timeout: 60_000 });
    } catch (e) {
      // What the page and Kueue show instead, for whoever reads the failure.
      const shown = await page.locator("#app").textContent();
      const stream = await page.evaluate(async () => {
        const leave = new AbortController();
        const answer = await fetch("/api/queues/watch", { signal: leave.signal });
        leave.abort();
        return answer.status;
      }).catch((err) => String(err));
      const workloads = kubectlRun(["get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "wide"]);
      throw new Error(`${e.message}\nThe page shows: ${shown}\nA new stream's answer: ${stream}\nKueue holds:\n${workloads}`);
    }
    await page.waitForSelector(`${queueSection} [data-count="admitted"]:text("1 admitted")`, { timeout: 30_000 });
    assert.equal(await page.locator(pendingRow(first)).count(), 0, `${first} is admitted, yet listed as pending`);
    // Kueue's own reason, once it has tried the Workload.
    await page.waitForFunction(
      (selector) => /quota/i.test(document.querySelector(selector)?.textContent ?? ""),
      `${pendingRow(second)} td.message`,
      { timeout: 30_000 },
    );
    assert.match(await page.locator(`${queueSection} tr[data-quota="default-flavor/nvidia.com/gpu"]`).textContent(), /default-flavor\s*nvidia\.com\/gpu\s*1\s*1/);
    const ordering = await page.locator(`${queueSection} caption.ordering`).getAttribute("data-ordering");
    assert.ok(ordering === "kueue" || ordering === "view", `ordering ${ordering}`);
    await page.screenshot({ path: join(screenshots, "dashboard-queues.png"), fullPage: true });

    // The list's Position column, and the waiting job's page.
    await page.goto(page.url().replace(/#.*$/, "") + "#/");
    await page.waitForFunction(
      ([selector, text]) => document.querySelector(selector)?.textContent === text,
      [`tr[data-job="${namespace}/pytorchtrainingjobs/${second}"] td.position`, `#1 in ${queueName}`],
      { timeout: 30_000 },
    );
    await page.goto(page.url().replace(/#.*$/, "") + `#/job/${namespace}/pytorchtrainingjobs/${second}`);
    await page.waitForSelector("#workload-position", { timeout: 30_000 });
    assert.match(await page.locator("#workload-position").textContent(), new RegExp(`^1 in ${queueName}`));
    assert.match(await page.locator("#workload-facts").textContent(), /Waiting because/);

    // The first goes: the second is admitted, and leaves the queue, live.
    await page.goto(page.url().replace(/#.*$/, "") + "#/queues");
    await page.waitForSelector(`${pendingRow(second)}[data-position="1"]`, { timeout: 30_000 });
    await page.evaluate(() => {
      window.__queuesSameDocument = true;
    });
    kubectlRun(["delete", "pytorchtrainingjobs", first, "-n", namespace, "--wait=false"]);
    await page.locator(pendingRow(second)).waitFor({ state: "detached", timeout: 60_000 });
    await page.waitForSelector(`${queueSection} [data-count="admitted"]:text("1 admitted")`, { timeout: 30_000 });
    assert.equal(await page.evaluate(() => window.__queuesSameDocument), true, "the page was reloaded");
  } finally {
    await page.close();
    ownDashboard.kill("SIGTERM");
    kubectlRun(["delete", "pytorchtrainingjobs", ...queuedJobs, "-n", namespace, "--ignore-not-found", "--wait=false"]);
  }
});

test("no script error or Content-Security-Policy violation", () => {
  assert.deepEqual(pageErrors, []);
});
