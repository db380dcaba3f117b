// The actions on a job, shared by the list and the job page. Each shows the
// server's answer: what it did, or the API's refusal with its code.

import { describeStatus, ApiError, jobPath, request } from "./api";
import { h, replace } from "./dom";

export interface JobRef {
  namespace: string;
  resource: string;
  name: string;
  paused?: boolean;
  // debugging: the job runs in debug mode, which resume ends.
  debugging?: boolean;
  // finished jobs cannot be paused or resumed (409): only deleted.
  finished?: boolean;
  // elastic: the bounds and target of an elastic job, which scale changes.
  elastic?: { min: number; max: number; expected: number };
}

// run sends one action and writes its outcome into result.
export async function run(result: HTMLElement, label: string, send: () => Promise<unknown>): Promise<boolean> {
  replace(result, `${label}…`);
  result.className = "result";
  try {
    await send();
    replace(result, `${label}: done`);
    result.className = "result ok";
    return true;
  } catch (e) {
    const message = e instanceof ApiError ? describeStatus(e.status) : String(e);
    replace(result, `${label} refused: ${message}`);
    result.className = "result refused";
    return false;
  }
}

// buttons are the actions a job offers: pause, or resume a paused or
// debugged job, debug and, for an elastic job, scale, while it is not
// finished; and delete.
export function buttons(job: JobRef, result: HTMLElement): HTMLElement {
  const path = jobPath(job.namespace, job.resource, job.name);
  const action = job.paused || job.debugging ? "resume" : "pause";
  const post = (what: string, body = "{}") => () => run(result, `${what} ${job.name}`, () => request("POST", `${path}/${what}`, body));
  return h(
    "span",
    { class: "actions" },
    !job.finished && h("button", { type: "button", "data-action": action, onclick: post(action) }, action === "pause" ? "Pause" : "Resume"),
    !job.finished && action === "pause" && h("button", { type: "button", "data-action": "debug", title: "Restart the pods with their training containers asleep, to look inside", onclick: post("debug") }, "Debug"),
    !job.finished && job.elastic && scaleControl(job, job.elastic, path, result),
    h("button", {
      type: "button",
      class: "danger",
      "data-action": "delete",
      onclick: () => {
        if (!window.confirm(`Delete ${job.namespace}/${job.name}? Its pods are deleted too.`)) return;
        void run(result, `delete ${job.name}`, () => request("DELETE", path));
      },
    }, "Delete"),
  );
}

// scaleControl sets an elastic job's replicas, within its bounds; the API
// has the last word (a 422 outside them).
function scaleControl(job: JobRef, elastic: NonNullable<JobRef["elastic"]>, path: string, result: HTMLElement): HTMLElement {
  const input = h("input", { type: "number", class: "scale-replicas", "aria-label": "replicas", min: elastic.min, max: elastic.max, value: elastic.expected });
  return h(
    "span",
    { class: "scale" },
    input,
    h("button", {
      type: "button",
      "data-action": "scale",
      onclick: () => run(result, `scale ${job.name} to ${input.value}`, () => request("POST", `${path}/scale`, JSON.stringify({ replicas: Number(input.value) }))),
    }, "Scale"),
  );
}
