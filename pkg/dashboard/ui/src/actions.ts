// The actions on a job, shared by the list and the job page. Each shows the
// server's answer: what it did, or the API's refusal with its code.

import { describeStatus, ApiError, jobPath, request } from "./api";
import { h, replace } from "./dom";

export interface JobRef {
  namespace: string;
  resource: string;
  name: string;
  paused?: boolean;
  // finished jobs cannot be paused or resumed (409): only deleted.
  finished?: boolean;
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

// buttons are the actions a job offers: pause or resume while it is not
// finished, and delete.
export function buttons(job: JobRef, result: HTMLElement): HTMLElement {
  const path = jobPath(job.namespace, job.resource, job.name);
  const action = job.paused ? "resume" : "pause";
  return h(
    "span",
    { class: "actions" },
    !job.finished && h("button", {
      type: "button",
      "data-action": action,
      onclick: () => run(result, `${action} ${job.name}`, () => request("POST", `${path}/${action}`, "{}")),
    }, action === "pause" ? "Pause" : "Resume"),
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
