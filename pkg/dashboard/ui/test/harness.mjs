// What the dashboard's browser tests and its benchmark share: the stack's
// binaries, kubectl, kubectl training dashboard started in the background,
// and Debian's Chromium. They run from hack/ (or test/e2e), which sets
// REPO_ROOT and KUBECONFIG.

import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const repo = process.env.REPO_ROOT;
if (!repo || !process.env.KUBECONFIG) {
  throw new Error("REPO_ROOT and KUBECONFIG are unset: run through hack/test-dashboard.sh, hack/bench-dashboard.sh or test/e2e");
}
export const kubectl = join(repo, "_output/bin/kubectl");
export const plugin = join(repo, "_output/bin/kubectl-training");
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

// kubectlRun runs kubectl with input on its stdin and returns its output.
export function kubectlRun(args, input) {
  return execFileSync(kubectl, args, { input, encoding: "utf8", maxBuffer: 64 << 20 });
}

// getJSON is kubectl get -o json of one object.
export function getJSON(resource, name, namespace) {
  return JSON.parse(kubectlRun(["get", resource, name, "-n", namespace, "-o", "json"]));
}

// startDashboard starts kubectl training dashboard with env added to the
// environment and resolves to the process and its sign-in address.
export function startDashboard(env = {}) {
  const proc = spawn(plugin, ["dashboard", "--no-browser"], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (chunk) => {
      out += chunk;
      const found = out.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=\S+/);
      if (found) resolve({ proc, url: found[0] });
    });
    proc.on("exit", (code) => reject(new Error(`kubectl training dashboard exited with ${code}: ${out}`)));
  });
}

// launchBrowser starts headless Chromium on a profile of its own; close()
// ends it and removes the profile.
export async function launchBrowser(prefix) {
  const profile = mkdtempSync(join(tmpdir(), `${prefix}-chromium-`));
  const context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath, headless: true, args: chromiumArgs });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

// watchPageErrors collects a page's script errors and Content-Security-Policy
// violations into errors. Other console errors are not collected: Chromium
// logs every refused request (a 422, a 403) as one.
export function watchPageErrors(page, errors) {
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && /Content Security Policy/i.test(m.text()) && errors.push(m.text()));
}

// sleep resolves after ms milliseconds.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
