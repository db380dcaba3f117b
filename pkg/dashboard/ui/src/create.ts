// Create a job from YAML: the server decodes it strictly and creates it with
// the user's credentials; the page shows the server's answer, such as a 422
// that names the field.

import { ApiError, defaultNamespace, describeStatus, jobKinds, request } from "./api";
import { h, replace } from "./dom";
import { JobSummary } from "./types";

const example = `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: example
spec:
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
          command: ["python", "train.py"]
`;

export function createPage(root: HTMLElement): () => void {
  const text = h("textarea", { id: "create-yaml", rows: 24, cols: 90, spellcheck: "false", "aria-label": "the job's YAML" });
  text.value = example;
  const result = h("div", { class: "result", id: "create-result", role: "status" });
  const submit = h("button", { type: "button", id: "create-submit" }, "Create");
  submit.addEventListener("click", async () => {
    submit.disabled = true;
    replace(result, "Creating…");
    result.className = "result";
    try {
      const job = await request<JobSummary>("POST", "/api/jobs", text.value, "application/yaml");
      result.className = "result ok";
      const href = `#/job/${encodeURIComponent(job.namespace)}/${encodeURIComponent(job.resource)}/${encodeURIComponent(job.name)}`;
      replace(result, `Created ${job.kind} `, h("a", { href }, `${job.namespace}/${job.name}`));
    } catch (e) {
      result.className = "result refused";
      replace(result, e instanceof ApiError ? describeStatus(e.status) : String(e));
    } finally {
      submit.disabled = false;
    }
  });
  replace(
    root,
    h("h1", {}, "Create a job from YAML"),
    h("p", {}, `A training job of any kind (${jobKinds().map((k) => k.kind).join(", ")}); without metadata.namespace it goes to ${defaultNamespace()}.`),
    text,
    h("p", {}, submit),
    result,
  );
  return () => {};
}
