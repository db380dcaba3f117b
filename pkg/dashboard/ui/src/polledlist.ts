// The lists the dashboard server reads anew on each request rather than
// watches (the searches, the records of deleted jobs): a page reads one
// every few seconds while it is shown, and says what the server said of it,
// a refused list of every namespace or a list cut short.

import { ApiError, describeStatus, request, Status } from "./api";
import { h, replace } from "./dom";

// NamespacedList is such a list as the server gives it: the namespace read
// ("" for all), the items, whether they are the first only, and the API's
// refusal of every namespace when the user's own was read instead.
export interface NamespacedList<T> {
  namespace: string;
  items: T[];
  truncated?: boolean;
  refused?: Status;
}

export function errorMessage(e: unknown): string {
  return e instanceof ApiError ? describeStatus(e.status) : String(e);
}

// poll runs load now, then interval after each run ends for as long as it
// returns true, skipping the runs while the browser hides the page; the
// function it returns stops it.
export function poll(load: () => Promise<boolean>, interval: number): () => void {
  let timer: number | undefined;
  let stopped = false;
  const run = async () => {
    timer = undefined;
    const again = document.hidden || (await load());
    if (again && !stopped) timer = window.setTimeout(run, interval);
  };
  void run();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}

export interface PolledListOptions<T> {
  // path is the server's list, read with ?namespace= when namespace() names one.
  path: string;
  namespace: () => string;
  interval: number;
  // what the items are, in the notices: "searches", "records".
  what: string;
  // notices shows the refusal, the cut and a failed read; truncatedId is the
  // cut's notice's id.
  notices: HTMLElement;
  truncatedId: string;
  // loaded is called after each read that is still wanted: with the list,
  // or with undefined when the read failed (its error is in notices).
  loaded: (list: NamespacedList<T> | undefined) => void;
}

// PolledList is a list read again and again: reload reads it now (the
// namespace changed), stop ends the reads (the page is left).
export interface PolledList {
  reload(): void;
  stop(): void;
}

export function pollList<T>(o: PolledListOptions<T>): PolledList {
  let reads = 0;
  let left = false;
  // load reads the list; a read that a newer one overtook is dropped, and
  // none is shown once the page is left.
  async function load(): Promise<boolean> {
    const mine = ++reads;
    const namespace = o.namespace();
    const query = namespace ? `?namespace=${encodeURIComponent(namespace)}` : "";
    let got: NamespacedList<T> | undefined;
    try {
      got = await request<NamespacedList<T>>("GET", `${o.path}${query}`);
      if (left) return false;
      if (mine !== reads) return true;
      replace(
        o.notices,
        got.refused && h("p", { class: "refused" }, `The ${o.what} of every namespace: ${describeStatus(got.refused)}. Showing those of ${got.namespace}.`),
        got.truncated &&
          h("p", { class: "notice", id: o.truncatedId }, `Showing the first ${got.items.length} ${o.what} only: name a namespace to see the others.`),
      );
    } catch (e) {
      if (left) return false;
      if (mine !== reads) return true;
      replace(o.notices, h("p", { class: "refused" }, errorMessage(e)));
    }
    o.loaded(got);
    return true;
  }
  const stopPolling = poll(load, o.interval);
  return {
    reload: () => void load(),
    stop: () => {
      left = true;
      stopPolling();
    },
  };
}
