// The dashboard's entry: signs the page's session in, then shows the page
// the URL's fragment names: #/ the jobs list, #/job/NS/RESOURCE/NAME a job,
// #/create the create form, #/run the form that makes a job from a runtime,
// #/tuning the hyperparameter searches and #/tuning/NS/NAME a search.

import "./style.css";
import { describeStatus, ApiError, startSession } from "./api";
import { createPage } from "./create";
import { h, replace } from "./dom";
import { jobPage } from "./job";
import { jobsPage } from "./list";
import { runPage } from "./run";
import { signInOffered, signInPage, signOut } from "./signin";
import { searchesPage, searchPage } from "./tuning";

const app = document.getElementById("app")!;
let leave: () => void = () => {};

function route(): void {
  leave();
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
