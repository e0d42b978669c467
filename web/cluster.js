// The cluster panel: GET /v1/cluster, the etcd members and who leads.

import { api, clearProblem, showProblem } from "./api.js";
import { now, timeEl } from "./clock.js";
import { $, el, setText } from "./dom.js";
import { state } from "./state.js";

export async function loadCluster() {
  let c;
  try {
    c = await api("/v1/cluster");
  } catch (err) {
    showProblem($("cluster-error"), err);
    return;
  }
  clearProblem($("cluster-error"));
  const members = c.members || [];
  const leader = members.find((m) => m.is_leader);
  const leaderEl = $("cluster-leader");
  setText(leaderEl, leader ? leader.name || leader.id : "none");
  leaderEl.classList.toggle("bad", !leader);
  leaderEl.title = leader ? `member ${leader.id}` : "no member leads: the cluster cannot serve writes until one is elected";
  setText($("cluster-term"), String(c.raft_term));
  showRevision(c.revision);
  setText($("cluster-size"), String(members.length));
  $("cluster-members").replaceChildren(...members.map(member));
  const upd = $("cluster-updated");
  upd.replaceChildren("Updated ", timeEl("ago", new Date(now()).toISOString()), ", every 5 s.");
}

function member(m) {
  return el(
    "li",
    { "data-testid": "cluster-member", "data-leader": m.is_leader ? "true" : "false" },
    el(
      "div",
      { class: "member-head" },
      el("strong", {}, m.name || "(starting)"),
      el("span", { class: `badge ${m.is_leader ? "leader" : "follower"}` }, m.is_leader ? "leader" : "follower"),
      el("code", { class: "rev", title: "member ID" }, m.id),
    ),
    el(
      "dl",
      { class: "urls" },
      el("dt", {}, "client"),
      el("dd", {}, (m.client_urls || []).length ? m.client_urls.map((u) => el("code", {}, u)) : "—"),
      el("dt", {}, "peer"),
      el("dd", {}, (m.peer_urls || []).length ? m.peer_urls.map((u) => el("code", {}, u)) : "—"),
    ),
  );
}

// showRevision shows rev if it is newer than any seen: the cluster's
// answers and the events both carry one.
export function showRevision(rev) {
  if (!(rev > state.revision)) return;
  state.revision = rev;
  setText($("cluster-revision"), String(rev));
}
