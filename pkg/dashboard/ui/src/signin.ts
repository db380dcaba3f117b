// The sign-in of the dashboard in the cluster: the user gives their own
// bearer token (a ServiceAccount's from kubectl create token, or their OIDC ID
// token); the server asks the API server whom it authenticates and keeps it in
// the session, never in the browser. Behind a proxy that adds the token to
// every request, this page never shows.

import { ApiError, describeStatus, request } from "./api";
import { h, replace } from "./dom";

// signInOffered tells whether this server signs in with bearer tokens: only
// the server in the cluster answers.
export async function signInOffered(): Promise<boolean> {
  try {
    await request("GET", "/api/signin");
    return true;
  } catch {
    return false;
  }
}

export function signInPage(root: HTMLElement): void {
  const token = h("input", { type: "password", id: "signin-token", autocomplete: "off", "aria-label": "bearer token", size: 60 });
  const result = h("div", { class: "result", id: "signin-result", role: "status" });
  const submit = h("button", { type: "submit", id: "signin-submit" }, "Sign in");
  const form = h(
    "form",
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        replace(result, "Signing in…");
        result.className = "result";
        try {
          await request("POST", "/api/signin", JSON.stringify({ token: token.value }));
          location.reload();
        } catch (err) {
          replace(result, err instanceof ApiError ? describeStatus(err.status) : String(err));
          result.className = "result refused";
        }
      },
    },
    h("p", {}, "Sign in with your Kubernetes bearer token. Every request then acts as you, with your rights, no more."),
    h("p", {}, h("code", {}, "kubectl create token NAME"), " gives a ServiceAccount's; your OIDC ID token works as well."),
    token,
    " ",
    submit,
  );
  replace(root, h("h1", {}, "Sign in"), form, result);
}

// signOut ends the session and shows the sign-in again.
export async function signOut(): Promise<void> {
  await request("POST", "/api/signout");
  location.reload();
}
