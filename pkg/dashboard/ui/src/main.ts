// The dashboard's entry: signs the page's session in, then shows the page
// the URL's fragment names: #/ the jobs list, #/job/NS/RESOURCE/NAME a job,
// #/create the create form, #/run the form that makes a job from a runtime,
// #/tuning the hyperparameter searches and #/tuning/NS/NAME a search;
// #/history the records of deleted jobs and #/history/NS/NAME one of them;
// #/cluster the nodes, what they hold and the jobs on them; #/queues Kueue's
// queues;
// #/compare?jobs=NS/RESOURCE/NAME,…&align=…&metric=… jobs side by side.

import "./style.css";
import { describeStatus, ApiError, startSession } from "./api";
import { clusterPage } from "./cluster";
import { comparePage } from "./compare";
import { createPage } from "./create";
import { h, replace } from "./dom";
import { historyPage, recordPage } from "./history";
import { jobPage } from "./job";
import { jobsPage } from "./list";
import { queuesPage } from "./queues";
import { runPage } from "./run";
import { signInOffered, signInPage, signOut } from "./signin";
import { searchesPage, searchPage } from "./tuning";

const app = document.getElementById("app")!;
let leave: () => void = () => {};

function route(): void {
  leave();
  const compare = location.hash.match(/^#\/compare(?:\?(.*))?$/);
  if (compare) {
    leave = comparePage(app, compare[1] ?? "");
    return;
  }
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "job" && parts.length === 4) {
    leave = jobPage(app, parts[1], parts[2], parts[3]);
  } else if (parts[0] === "create") {
    leave = createPage(app);
  } else if (parts[0] === "run") {
    leave = runPage(app);
  } else if (parts[0] === "tuning" && parts.length === 3) {
    leave = searchPage(app, parts[1], parts[2]);
  } else if (parts[0] === "tuning") {
    leave = searchesPage(app);
  } else if (parts[0] === "history" && parts.length === 3) {
    leave = recordPage(app, parts[1], parts[2]);
  } else if (parts[0] === "history") {
    leave = historyPage(app);
  } else if (parts[0] === "queues") {
    leave = queuesPage(app);
  } else if (parts[0] === "cluster") {
    leave = clusterPage(app);
  } else {
    leave = jobsPage(app);
  }
}

async function main(): Promise<void> {
  let session;
  try {
    session = await startSession();
  } catch (e) {
    if (e instanceof ApiError && e.status.code === 401 && (await signInOffered())) {
      signInPage(app);
      return;
    }
    replace(app, h("p", { class: "refused" }, e instanceof ApiError ? describeStatus(e.status) : String(e)));
    return;
  }
  if (session.inCluster) {
    document.querySelector("header nav")?.append(" ", h("button", { type: "button", id: "signout", onclick: () => void signOut() }, "Sign out"));
  }
  window.addEventListener("hashchange", route);
  route();
}

void main();
