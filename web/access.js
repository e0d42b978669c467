// Who this tab is and what it may do: GET /v1/whoami, in the access panel
// and, once signed in, beside the sign-out button. The credential's name
// (never its token), its rules by name prefix and its quotas, with what
// they count now; or that authentication is off.

import { api, clearProblem, showProblem } from "./api.js";
import { now, timeEl } from "./clock.js";
import { $, el, keepRows, setText } from "./dom.js";
import { examplesUnder } from "./empty.js";
import { coalesce } from "./schedule.js";
import { state } from "./state.js";

// What each role lets a credential do on the names of its rule.
const MAY = {
  read: "see them: lists, history and events",
  write: "see and hold them (take, renew, release), and write keys",
  admin: "see and hold them, revoke others' holds, lift lock-delays, reset fenced values",
};

const RANK = { read: 1, write: 2, admin: 3 };

// ruleOf is the rule that decides name, the one with its longest prefix;
// null when none covers it.
function ruleOf(rules, name) {
  let best = null;
  for (const r of rules) if (name.startsWith(r.prefix) && (!best || r.prefix.length > best.prefix.length)) best = r;
  return best;
}

// mayNot says whether the signed-in credential's rules are known and do
// not give role on name; unknown rules allow it, as the API decides.
export function mayNot(name, role) {
  const w = state.access;
  if (!w) return false;
  const r = ruleOf(w.rules || [], name);
  return !r || RANK[r.role] < RANK[role];
}

// writablePrefix is a prefix of the rules under which the credential may
// write names of every kind, for the empty states' examples: "" when it
// may write the examples' own names, or when no rule gives write.
function writablePrefix(rules) {
  const r = ruleOf(rules, "my-first-lock");
  if (r && RANK[r.role] >= RANK.write) return "";
  const w = rules.find((x) => RANK[x.role] >= RANK.write && /^[A-Za-z0-9._:-]+$/.test(x.prefix));
  return w ? w.prefix : "";
}

// The quotas, in the order shown, and where each is counted. holds,
// sessions and waiters come with what they count now.
const QUOTAS = [
  { key: "holds", label: "Holds", where: "locks, leaderships, permits and read/write holds at once, across the cluster" },
  { key: "sessions", label: "Sessions", where: "live sessions, across the cluster" },
  { key: "waiters", label: "Waiting", where: "acquires waiting in a queue at once, on each node" },
  { key: "streams", label: "Streams", where: "event streams open at once, on each node" },
];

// rendered runs after what the page knows of its access changed (set by
// initAccess).
let rendered = () => {};

// initAccess sets what runs once the access is shown: what other panels
// say by it.
export function initAccess(onRendered) {
  rendered = onRendered;
}

// loadAccess reads who this tab is, and shows it.
export async function loadAccess() {
  let w;
  try {
    w = await api("/v1/whoami");
  } catch (err) {
    if (err.status === 401) {
      // auth.js asks for a token; nothing here is known until then.
      state.access = null;
      clearProblem($("access-error"));
      renderSignedOut();
      return;
    }
    showProblem($("access-error"), err);
    return;
  }
  clearProblem($("access-error"));
  state.access = w;
  render(w);
  rendered();
}

// loadUsageSoon reads the usage again after a change (an event), at most
// once a second, when there is a usage to show.
const reloadSoon = coalesce(loadAccess, 1000);
export function loadUsageSoon() {
  if (state.access && state.access.usage) reloadSoon();
}

function renderSignedOut() {
  const panel = $("access");
  panel.dataset.auth = "signedout";
  setText($("access-who"), "Sign in to see who you are here and what you may do.");
  $("access-rules-wrap").hidden = true;
  $("access-quotas-wrap").hidden = true;
  setText($("access-updated"), "");
}

function render(w) {
  const panel = $("access");
  const who = $("access-who");
  if (w.authentication) {
    panel.dataset.auth = "on";
    who.replaceChildren("Signed in as ", el("strong", { "data-testid": "access-credential" }, w.credential), ".");
    setText($("auth-state"), `signed in as ${w.credential}`);
  } else {
    panel.dataset.auth = "off";
    who.replaceChildren(
      el("strong", { "data-testid": "access-off" }, "Authentication is off"),
      ": this baton asks for no token, and every request may do everything.",
    );
  }
  renderRules(w);
  renderQuotas(w);
  examplesUnder(writablePrefix(w.rules || []));
}

function renderRules(w) {
  const rules = w.rules || [];
  $("access-rules-wrap").hidden = rules.length === 0;
  keepRows(
    $("access-rules"),
    rules,
    (r) => r.prefix,
    (r) => r.role,
    (r) =>
      el(
        "li",
        { "data-testid": "access-rule", "data-prefix": r.prefix, "data-role": r.role },
        el("span", { class: "rule-prefix" }, r.prefix === "" ? el("em", {}, "every name") : [el("code", {}, r.prefix), "…"]),
        el("span", { class: `badge role-${r.role}` }, r.role),
        el("span", { class: "rule-may detail" }, MAY[r.role] || ""),
      ),
  );
  // Scoped: say how the rules combine, and what the page leaves out.
  const everything = rules.length === 1 && rules[0].prefix === "";
  $("access-scoped").hidden = !w.authentication || everything;
}

function renderQuotas(w) {
  const q = w.quotas || {};
  const u = w.usage || {};
  const items = QUOTAS.filter((x) => q[x.key] > 0).map((x) => ({ ...x, limit: q[x.key], used: u[x.key] }));
  if (q.rate > 0) items.push({ key: "rate", label: "Rate", limit: q.rate, burst: q.burst });
  $("access-quotas-wrap").hidden = items.length === 0;
  keepRows(
    $("access-quotas"),
    items,
    (x) => x.key,
    (x) => `${x.limit} ${x.used} ${x.burst}`,
    quotaRow,
  );
  const upd = $("access-updated");
  if (w.usage) upd.replaceChildren("Usage read ", timeEl("ago", new Date(now()).toISOString()), "; it follows your holds as they change.");
  else setText(upd, "");
}

function quotaRow(x) {
  if (x.key === "rate") {
    const burst = x.burst > 0 ? `, ${x.burst} at once` : "";
    return el(
      "li",
      { "data-testid": "access-quota", "data-quota": x.key, title: "requests a second, on average and at once, on each node" },
      el("span", { class: "quota-label" }, x.label),
      el("span", { class: "quota-count", "data-testid": "access-quota-count" }, `${x.limit} requests a second${burst}, on each node`),
    );
  }
  const counted = typeof x.used === "number";
  const kids = [el("span", { class: "quota-label", title: x.where }, x.label)];
  if (counted) {
    const full = x.used >= x.limit;
    kids.push(
      el("meter", { min: 0, max: x.limit, low: Math.ceil(x.limit * 0.75), high: Math.ceil(x.limit * 0.9), optimum: 0, value: x.used, "aria-label": `${x.label}: ${x.used} of ${x.limit}` }),
      el("span", { class: `quota-count${full ? " full" : ""}`, "data-testid": "access-quota-count" }, `${x.used} of ${x.limit}`),
    );
  } else {
    kids.push(el("span", { class: "quota-count", "data-testid": "access-quota-count" }, `up to ${x.limit}`));
  }
  return el("li", { "data-testid": "access-quota", "data-quota": x.key, title: x.where }, ...kids);
}
