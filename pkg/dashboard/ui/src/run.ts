// Make a job from a runtime, as kubectl training run does: pick one of the
// runtimes the user may read (GET /api/runtimes), give what is the
// trainer's (nodes, resources per node, a command, variables), and the page
// posts the job to POST /api/jobs with spec.runtimeRef and spec.trainer; the
// apiserver applies the runtime. The page shows the API's answer as it is:
// a 422 names the field (spec.trainer.numNodes), a 403 the runtime the user
// may not get.

import { ApiError, defaultNamespace, describeStatus, request } from "./api";
import { h, replace } from "./dom";
import { JobSummary, RuntimeList, RuntimeView } from "./types";

// FormError is what the form itself cannot read (an unclosed quote, a
// variable without "="): said on the page, nothing sent.
class FormError extends Error {}

export function runPage(root: HTMLElement): () => void {
  let runtimes: RuntimeView[] = [];
  // Only the answer to the last request for runtimes is shown.
  let loads = 0;
  let left = false;

  const runtime = h("select", { id: "run-runtime", name: "runtime", required: true, "aria-describedby": "run-runtime-info" });
  const runtimeInfo = h("span", { class: "hint", id: "run-runtime-info" }, "Loading the runtimes…");
  const name = h("input", { id: "run-name", name: "name", type: "text", required: true, autocomplete: "off", spellcheck: "false" });
  const namespace = h("input", { id: "run-namespace", name: "namespace", type: "text", autocomplete: "off", spellcheck: "false" });
  namespace.value = defaultNamespace();
  // No min or step: the form does not check what the API decides; a 0
  // is the API's 422 to show.
  const nodes = h("input", { id: "run-nodes", name: "nodes", type: "number", placeholder: "the runtime's", "aria-describedby": "run-nodes-hint" });
  const cpu = h("input", { id: "run-cpu", name: "cpu", type: "text", placeholder: "e.g. 1 or 500m", spellcheck: "false" });
  const memory = h("input", { id: "run-memory", name: "memory", type: "text", placeholder: "e.g. 2Gi", spellcheck: "false" });
  const gpus = h("input", { id: "run-gpus", name: "gpus", type: "number", placeholder: "none" });
  const command = h("input", {
    id: "run-command",
    name: "command",
    type: "text",
    placeholder: "python3 train.py --epochs 3",
    spellcheck: "false",
    "aria-describedby": "run-command-hint",
  });
  const env = h("textarea", { id: "run-env", name: "env", rows: 3, placeholder: "LR=0.01", spellcheck: "false", "aria-describedby": "run-env-hint" });
  const manifest = h("pre", { class: "yaml", id: "run-manifest" });
  const notices = h("div", { class: "notices", id: "run-notices" });
  const result = h("div", { class: "result", id: "run-result", role: "status" });
  const submit = h("button", { type: "submit", id: "run-submit" }, "Create");

  const row = (input: HTMLElement, label: string, hint?: HTMLElement | string, hintId?: string) => [
    h("label", { for: input.id }, label),
    h("div", {}, input, typeof hint === "string" ? h("span", { class: "hint", id: hintId }, hint) : hint),
  ];
  // novalidate: every value goes to the API, which is the one to say what is
  // wrong with it.
  const form = h(
    "form",
    { class: "run", id: "run-form", novalidate: true },
    row(runtime, "Runtime", runtimeInfo),
    row(name, "Name"),
    row(namespace, "Namespace"),
    row(nodes, "Nodes", "spec.trainer.numNodes: the replicas that train; empty keeps the runtime's.", "run-nodes-hint"),
    row(cpu, "CPU per node"),
    row(memory, "Memory per node"),
    row(gpus, "GPUs per node"),
    row(command, "Command", "Split into words as a shell would, quotes keeping words together; empty runs the runtime's own.", "run-command-hint"),
    row(env, "Environment", "One NAME=value a line.", "run-env-hint"),
    h("div", { class: "actions" }, submit),
  );

  function selected(): RuntimeView | undefined {
    return runtimes.find((r) => optionValue(r) === runtime.value);
  }

  // buildJob is the job the form describes, as the API takes it.
  function buildJob(): object {
    const rt = selected();
    if (!rt) throw new FormError("Pick a runtime to make the job from.");
    const trainer: Record<string, unknown> = {};
    const words = splitCommand(command.value);
    if (words.length) trainer.command = words;
    const vars = parseEnv(env.value);
    if (vars.length) trainer.env = vars;
    if (nodes.value.trim() !== "") trainer.numNodes = Number(nodes.value);
    // CPU and memory as requests and limits alike, GPUs as limits: the
    // API takes extended resources as limits only.
    const requests: Record<string, string> = {};
    const limits: Record<string, string> = {};
    if (cpu.value.trim()) requests.cpu = limits.cpu = cpu.value.trim();
    if (memory.value.trim()) requests.memory = limits.memory = memory.value.trim();
    if (gpus.value.trim()) limits["nvidia.com/gpu"] = gpus.value.trim();
    if (Object.keys(limits).length) {
      trainer.resourcesPerNode = Object.keys(requests).length ? { requests, limits } : { limits };
    }
    const spec: Record<string, unknown> = { runtimeRef: { name: rt.name, kind: rt.runtimeKind } };
    if (Object.keys(trainer).length) spec.trainer = trainer;
    return {
      apiVersion: "batch.tensorstack.dev/v1beta1",
      kind: rt.kind,
      metadata: { name: name.value.trim(), namespace: namespace.value.trim() || defaultNamespace() },
      spec,
    };
  }

  // preview shows the job the form would send, as it is typed.
  function preview(): void {
    const rt = selected();
    runtimeInfo.textContent = rt
      ? `Makes a ${rt.kind} of ${rt.replicaTypes.length ? rt.replicaTypes.join(", ") : "the replicas the job gives"}${rt.image ? ` on ${rt.image}` : ""}.`
      : runtimes.length
        ? "Pick a runtime."
        : "No runtime to pick.";
    try {
      manifest.textContent = JSON.stringify(buildJob(), null, 2);
    } catch (e) {
      manifest.textContent = e instanceof Error ? e.message : String(e);
    }
  }

  async function load(): Promise<void> {
    const load = ++loads;
    const ns = namespace.value.trim() || defaultNamespace();
    const keep = runtime.value;
    let list: RuntimeList;
    try {
      list = await request<RuntimeList>("GET", `/api/runtimes?namespace=${encodeURIComponent(ns)}`);
    } catch (e) {
      if (left || load !== loads) return;
      runtimes = [];
      replace(runtime);
      replace(notices, h("p", { class: "refused" }, e instanceof ApiError ? describeStatus(e.status) : String(e)));
      preview();
      return;
    }
    if (left || load !== loads) return;
    runtimes = list.items;
    replace(
      runtime,
      runtimes.map((r) =>
        h(
          "option",
          { value: optionValue(r), disabled: !r.kind },
          `${r.name} (${r.scope === "Cluster" ? "Cluster" : `Namespace ${r.namespace}`}, ${r.kind || "a kind this dashboard does not know"})`,
        ),
      ),
    );
    const usable = runtimes.filter((r) => r.kind);
    runtime.value = usable.some((r) => optionValue(r) === keep) ? keep : usable[0] ? optionValue(usable[0]) : "";
    replace(
      notices,
      (list.refused ?? []).map((status, i) =>
        h("p", { class: "refused" }, `${list.forbidden?.[i] ?? "Some runtimes"} left out: ${describeStatus(status)}`),
      ),
      runtimes.length ? null : h("p", { class: "empty" }, `No runtimes you may read for namespace ${list.namespace}.`),
    );
    preview();
  }

  form.addEventListener("input", preview);
  namespace.addEventListener("change", () => void load());
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let job: object;
    try {
      job = buildJob();
    } catch (err) {
      result.className = "result refused";
      replace(result, err instanceof Error ? err.message : String(err));
      return;
    }
    submit.disabled = true;
    replace(result, "Creating…");
    result.className = "result";
    try {
      const created = await request<JobSummary>("POST", "/api/jobs", JSON.stringify(job), "application/json");
      result.className = "result ok";
      const href = `#/job/${encodeURIComponent(created.namespace)}/${encodeURIComponent(created.resource)}/${encodeURIComponent(created.name)}`;
      replace(result, `Created ${created.kind} `, h("a", { href }, `${created.namespace}/${created.name}`));
    } catch (err) {
      result.className = "result refused";
      replace(result, err instanceof ApiError ? describeStatus(err.status) : String(err));
    } finally {
      submit.disabled = false;
    }
  });

  replace(
    root,
    h("h1", {}, "New job from a runtime"),
    h(
      "p",
      {},
      "A runtime holds the job's pods, images and policies; give what is yours and the API server applies the runtime when it creates the job. ",
      h("a", { href: "#/create" }, "Create from YAML"),
      " writes the whole job instead.",
    ),
    notices,
    form,
    result,
    h("details", { id: "run-preview" }, h("summary", {}, "The job this sends"), manifest),
  );
  void load();
  return () => {
    left = true;
  };
}

function optionValue(r: RuntimeView): string {
  return `${r.runtimeKind}/${r.name}`;
}

// splitCommand splits a command line into words as a shell would, simply:
// blanks separate words; single quotes keep everything up to the next one;
// double quotes keep everything but \" \\ \$ and \`, which stand for the
// character; a backslash outside quotes keeps the next character. Nothing is
// expanded: $(VAR) is left for Kubernetes, which expands it in args.
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = "";
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = "";
      else if (c === "\\" && i + 1 < line.length && `"\\$\``.includes(line[i + 1])) word += line[++i];
      else word += c;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      inWord = true;
      if (c === "'" || c === '"') quote = c;
      else if (c === "\\" && i + 1 < line.length) word += line[++i];
      else word += c;
    }
  }
  if (quote) throw new FormError(`Command: the ${quote === "'" ? "single" : "double"} quote is not closed.`);
  if (inWord) words.push(word);
  return words;
}

// parseEnv reads NAME=value lines; blank lines and # comments are skipped.
export function parseEnv(text: string): { name: string; value: string }[] {
  const vars: { name: string; value: string }[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "");
    if (!line.trim() || line.trim().startsWith("#")) return;
    const eq = line.indexOf("=");
    const name = eq < 0 ? "" : line.slice(0, eq).trim();
    if (!name) throw new FormError(`Environment, line ${i + 1}: ${JSON.stringify(line)} is not NAME=value.`);
    vars.push({ name, value: line.slice(eq + 1) });
  });
  return vars;
}
