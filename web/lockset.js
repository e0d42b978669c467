// Lock sets: several locks taken all or nothing with one token (POST
// /v1/locksets). Each member is an ordinary lock whose JSON (its hold, its
// waiter, its events) has "set", every name of the set in the order the
// acquire gave them. The page says so beside each member, in words, and
// links the members: pointing at or focusing one marks every member of its
// set, which is every one with its token.

import { el } from "./dom.js";

// inSet says x (a lock, a waiter, an event, a timeline hold) is a set's.
// Where the page writes a set's names into an attribute (data-set) it
// joins them with spaces, which no lock name has.
export function inSet(x) {
  return Array.isArray(x.set) && x.set.length > 1;
}

// setOthers lists the names of set other than name, in the set's order.
export function setOthers(set, name) {
  return set.filter((n) => n !== name);
}

// setTitle names set for a tooltip: "lock set of 3 (acct-1, acct-2,
// acct-3)".
export function setTitle(set) {
  return `lock set of ${set.length} (${set.join(", ")})`;
}

const NOTE_NAMES = 5; // other members a note names; a set has up to 64

// setNote is the line shown with the name of a member of set: a "set"
// badge and the other members ("set with acct-2, acct-3", or "… and 59
// more" past NOTE_NAMES: the tooltip, title, names them all).
export function setNote(set, name, title, testid) {
  const others = setOthers(set, name);
  const more = others.length > NOTE_NAMES ? ` and ${others.length - NOTE_NAMES + 1} more` : "";
  const shown = more ? others.slice(0, NOTE_NAMES - 1) : others;
  return el(
    "span",
    { class: "set-note", "data-testid": testid, title },
    el("span", { class: "badge set" }, "set"),
    ` with ${shown.join(", ")}${more}`,
  );
}

// withNote keeps a member's name and its note together, one item of its
// cell: the narrow layout lays a cell's items out in columns.
export function withNote(name, note) {
  return el("div", { class: "with-set" }, name, note);
}

// linkSets marks the members of a set in box: while the pointer is over,
// or the focus in, an element matching member (which carries data-token),
// every element of box matching member with the same data-token has the
// class cls, and box's data-linked-set is that token. It returns a
// function that marks again, to call once box's content changed.
export function linkSets(box, member, cls) {
  let hover = "";
  let focus = "";
  let marked = false;
  const tokenOf = (n) => {
    const m = n instanceof Element ? n.closest(member) : null;
    return m && box.contains(m) ? m.dataset.token : "";
  };
  const mark = () => {
    // A focused member removed (its set released) takes the focus with it
    // without a focusout.
    if (focus && !box.contains(document.activeElement)) focus = "";
    const token = focus || hover;
    if (!token && !marked) return; // nothing to mark nor to unmark: no walk over every row
    for (const m of box.querySelectorAll(member)) m.classList.toggle(cls, token !== "" && m.dataset.token === token);
    marked = token !== "";
    if (marked) box.dataset.linkedSet = token;
    else delete box.dataset.linkedSet;
  };
  box.addEventListener("pointerover", (ev) => {
    hover = tokenOf(ev.target);
    mark();
  });
  box.addEventListener("pointerleave", () => {
    hover = "";
    mark();
  });
  box.addEventListener("focusin", (ev) => {
    focus = tokenOf(ev.target);
    mark();
  });
  box.addEventListener("focusout", (ev) => {
    focus = tokenOf(ev.relatedTarget);
    mark();
  });
  return mark;
}
