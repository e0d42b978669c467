// Calls to baton's API, and its problems (RFC 9457 problem+json) shown
// readably.

import { learnSkew } from "./clock.js";
import { el } from "./dom.js";
import { authHeaders, storedToken } from "./token.js";

// APIError is a failed call: the problem's title, detail and code, and a
// line more (when to retry) in extra. status is 0 when baton did not answer.
export class APIError extends Error {
  constructor(status, title, detail, code, extra) {
    super(detail ? `${title}: ${detail}` : title);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.code = code;
    this.extra = extra || "";
  }
}

// unauthorized hears every 401, with the token the refused call sent ("" for
// none).
let unauthorized = () => {};

// onUnauthorized sets what a 401 calls (auth.js asks for a token).
export function onUnauthorized(fn) {
  unauthorized = fn;
}

// api calls the API and returns the decoded JSON (null for 204). Failures
// become an APIError carrying the problem+json title and detail.
export async function api(path, init) {
  const opts = Object.assign({ headers: authHeaders({ Accept: "application/json" }), cache: "no-store" }, init || {});
  if (opts.body !== undefined) opts.headers["Content-Type"] = "application/json";
  const sent = storedToken();
  let resp;
  try {
    resp = await fetch(path, opts);
  } catch (err) {
    throw new APIError(0, "Cannot reach baton", `${location.origin} did not answer (${err.message}). Is the server running?`, "network");
  }
  learnSkew(resp);
  if (resp.status === 204) return null;
  const type = resp.headers.get("Content-Type") || "";
  let body = null;
  if (type.includes("json")) {
    try {
      body = await resp.json();
    } catch {
      body = null;
    }
  }
  if (resp.ok) return body;
  const p = body && typeof body === "object" ? body : {};
  if (resp.status === 401) unauthorized(sent);
  const retry = resp.headers.get("Retry-After");
  throw new APIError(
    resp.status,
    p.title || `HTTP ${resp.status} ${resp.statusText}`.trim(),
    p.detail || "",
    p.code || "",
    retry ? `Retry after ${retry} s.` : "",
  );
}

export function lockPath(name) {
  return `/v1/locks/${encodeURIComponent(name)}`;
}

export function electionPath(name) {
  return `/v1/elections/${encodeURIComponent(name)}`;
}

export function semaphorePath(name) {
  return `/v1/semaphores/${encodeURIComponent(name)}`;
}

export function rwlockPath(name) {
  return `/v1/rwlocks/${encodeURIComponent(name)}`;
}

// showProblem renders an error readably in box: title, detail and the
// status and code for whoever reports it.
export function showProblem(box, err) {
  box.replaceChildren();
  if (err instanceof APIError) {
    box.append(el("strong", {}, err.title));
    if (err.detail) box.append(" ", el("span", {}, err.detail));
    if (err.extra) box.append(" ", el("span", {}, err.extra));
    const meta = [err.status ? `HTTP ${err.status}` : "", err.code].filter(Boolean).join(" · ");
    if (meta) box.append(" ", el("span", { class: "problem-code" }, `(${meta})`));
  } else {
    box.append(el("strong", {}, "Something went wrong"), " ", String(err && err.message ? err.message : err));
  }
  box.hidden = false;
}

export function clearProblem(box) {
  if (!box.hidden) {
    box.hidden = true;
    box.replaceChildren();
  }
}
