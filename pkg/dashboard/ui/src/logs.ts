// The live log of one replica: the server follows the pod's log with the
// user's credentials and streams its lines; the page keeps the last ones and
// filters them by a search term.

import { describeStatus, follow, Status } from "./api";
import { h, replace } from "./dom";
import { PodView } from "./types";

// maxLines bounds what the page keeps of a followed log.
const maxLines = 5000;

export class LogView {
  private readonly picker = h("select", { id: "log-pod", "aria-label": "replica" });
  private readonly search = h("input", { type: "search", id: "log-search", placeholder: "search", "aria-label": "search the log" });
  private readonly state = h("span", { class: "log-state", id: "log-state" });
  private readonly output = h("pre", { class: "log", id: "log-output" });
  private lines: string[] = [];
  private source?: EventSource;
  private following = "";

  constructor(root: HTMLElement, private readonly jobPath: string) {
    this.picker.addEventListener("change", () => this.start(this.picker.value));
    this.search.addEventListener("input", () => this.render());
    replace(root, h("div", { class: "log-controls" }, this.picker, this.search, this.state), this.output);
  }

  // setPods offers the job's pods; the first one is followed until the
  // user picks another.
  setPods(pods: PodView[], refused?: Status): void {
    if (refused) {
      this.state.textContent = `Pods: ${describeStatus(refused)}`;
      return;
    }
    const options = pods.flatMap((p) => p.containers.map((c) => `${p.name}/${c.name}`));
    const current = [...this.picker.options].map((o) => o.value).join("\n");
    if (options.join("\n") !== current) {
      replace(this.picker, options.map((o) => h("option", { value: o }, o)));
      if (options.includes(this.following)) this.picker.value = this.following;
    }
    if (!this.following && options.length > 0) this.start(options[0]);
  }

  close(): void {
    this.source?.close();
  }

  private start(target: string): void {
    this.close();
    this.following = target;
    this.lines = [];
    this.render();
    const [pod, container] = target.split("/");
    const query = new URLSearchParams({ pod, container });
    this.state.textContent = `following ${target}`;
    this.source = follow(`${this.jobPath}/logs?${query}`, {
      line: (line: { text: string }) => {
        this.lines.push(line.text);
        if (this.lines.length > maxLines) this.lines.splice(0, this.lines.length - maxLines);
        this.schedule();
      },
      end: () => {
        // The container ended: stop here rather than let EventSource
        // reconnect and show the tail again.
        this.close();
        this.state.textContent = `${target}: the log ended`;
      },
      refused: (body: { status: Status }) => {
        this.close();
        this.state.textContent = `${target}: ${describeStatus(body.status)}`;
      },
    });
  }

  // Lines come in bursts (the tail first): draw once per frame.
  private pending = false;
  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  private render(): void {
    const term = this.search.value;
    const shown = term ? this.lines.filter((l) => l.includes(term)) : this.lines;
    const atBottom = this.output.scrollTop + this.output.clientHeight >= this.output.scrollHeight - 4;
    this.output.textContent = shown.join("\n");
    if (atBottom) this.output.scrollTop = this.output.scrollHeight;
  }
}
