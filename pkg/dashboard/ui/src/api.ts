// The dashboard server's API: JSON requests with the session's CSRF token,
// and event streams of watched jobs and followed logs.

// Status is the Kubernetes API's Status, which the server passes through
// when the API refuses (or writes in the same shape itself).
export interface Status {
  code: number;
  reason?: string;
  message: string;
  details?: { causes?: { field?: string; message?: string; reason?: string }[] };
}

export class ApiError extends Error {
  constructor(readonly status: Status) {
    super(status.message);
  }
}

// The CSRF token lives in this module's memory only: never in localStorage
// or a cookie a script could read.
let csrfToken = "";
let userNamespace = "default";
let serverKinds: JobKind[] = [];

// JobKind is a training job kind the server serves, in the order the list
// shows them: the pages name no kind of their own.
export interface JobKind {
  kind: string;
  resource: string;
  shortName: string;
}

export interface Session {
  csrfToken: string;
  namespace: string;
  // inCluster: the server runs in the cluster, signed in with a bearer token.
  inCluster?: boolean;
  kinds: JobKind[];
}

export async function startSession(): Promise<Session> {
  const session = await request<Session>("GET", "/api/session");
  csrfToken = session.csrfToken;
  userNamespace = session.namespace;
  serverKinds = session.kinds ?? [];
  return session;
}

export function defaultNamespace(): string {
  return userNamespace;
}

export function jobKinds(): JobKind[] {
  return serverKinds;
}

export async function request<T>(method: string, path: string, body?: string, contentType = "application/json"): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method !== "GET") headers["X-Dashboard-CSRF"] = csrfToken;
  if (body !== undefined) headers["Content-Type"] = contentType;
  const response = await fetch(path, { method, headers, body, credentials: "same-origin" });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const status = (parsed as { status?: Status } | undefined)?.status;
    throw new ApiError(status ?? { code: response.status, message: text || response.statusText });
  }
  return parsed as T;
}

// describeStatus words a refusal the way kubectl does, with the code and the
// fields the API named.
export function describeStatus(status: Status): string {
  const fields = (status.details?.causes ?? []).map((c) => c.field).filter(Boolean);
  const reason = status.reason ? ` ${status.reason}` : "";
  return `${status.code}${reason}: ${status.message}` + (fields.length ? ` (fields: ${fields.join(", ")})` : "");
}

export interface StreamHandlers {
  [event: string]: (data: any) => void;
}

// follow opens an event stream and hands each event's JSON to its handler.
// EventSource reconnects by itself; close() ends it.
export function follow(path: string, handlers: StreamHandlers, onError?: () => void): EventSource {
  const source = new EventSource(path);
  for (const [event, handle] of Object.entries(handlers)) {
    source.addEventListener(event, (e) => handle(JSON.parse((e as MessageEvent).data)));
  }
  if (onError) source.onerror = onError;
  return source;
}

export function jobPath(namespace: string, resource: string, name: string): string {
  return `/api/namespaces/${encodeURIComponent(namespace)}/${encodeURIComponent(resource)}/${encodeURIComponent(name)}`;
}
