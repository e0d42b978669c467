// Signing in, when baton runs with --auth-file: the API answers 401 until
// the page sends a bearer token, so the page asks for one in a form.

import { api, APIError, clearProblem, onUnauthorized, showProblem } from "./api.js";
import { $, setText } from "./dom.js";
import { state } from "./state.js";
import { storedToken, storeToken } from "./token.js";

const signin = $("signin-dialog");

// signedIn runs once a token is kept (set by initAuth).
let signedIn = () => {};

// signinPutOff: the user closed the form ("Not now", Escape); it stays
// closed until they click Sign in.
let signinPutOff = false;

function keepToken(token) {
  storeToken(token);
  renderAuth();
}

// needToken answers a 401 to a call that sent the token sent ("" for
// none). A token that was sent and refused is dropped (the operator
// removed it, or it was mistyped), and the form asks for another; the user
// may put it off ("Not now") and sign in later.
export function needToken(sent) {
  if (!sent && storedToken()) return; // asked before a sign-in; the next call sends the token
  if (sent && sent === storedToken()) keepToken("");
  renderAuth(true);
  if (signinPutOff) return;
  openSignin(sent ? "baton no longer accepts the token this tab had. Sign in again." : "This baton asks for a token for its API.");
}

// renderAuth shows whether this tab is signed in; required records that
// the API asks for a token.
function renderAuth(required) {
  const signedIn = storedToken() !== "";
  if (required) state.authRequired = true;
  $("auth-state").hidden = !signedIn;
  $("signout").hidden = !signedIn;
  $("signin-open").hidden = signedIn || !state.authRequired;
}

function openSignin(why) {
  if (signin.open) return;
  setText($("signin-why"), why);
  clearProblem($("signin-error"));
  $("signin-token").value = "";
  $("signin-submit").disabled = false;
  signin.showModal();
}

// submitSignin checks the token with the weakest call there is (GET
// /v1/cluster needs the read role) before keeping it: a wrong one is
// refused in the form, and never stored.
async function submitSignin(ev) {
  ev.preventDefault();
  const token = $("signin-token").value.trim();
  if (!token) return;
  const submit = $("signin-submit");
  submit.disabled = true;
  clearProblem($("signin-error"));
  let resp;
  try {
    resp = await fetch("/v1/cluster", { headers: { Accept: "application/json", Authorization: `Bearer ${token}` }, cache: "no-store" });
  } catch (err) {
    showProblem($("signin-error"), new APIError(0, "Cannot reach baton", `${location.origin} did not answer (${err.message}).`, "network"));
    submit.disabled = false;
    return;
  }
  if (resp.status === 401) {
    showProblem($("signin-error"), new APIError(401, "Token refused", "baton does not know this token. Check it and try again.", "unauthorized"));
    submit.disabled = false;
    $("signin-token").select();
    return;
  }
  // Anything else (a 503 while etcd has no leader, say) is not about the
  // token: keep it, and let the panels say what is wrong.
  signinPutOff = false;
  keepToken(token);
  $("signin-token").value = "";
  signin.close("signed-in");
  signedIn();
}

function signOut() {
  keepToken("");
  // A fresh page: nothing read with the token stays on the screen.
  location.reload();
}

// initAuth wires the sign-in form and the sign-in and sign-out buttons;
// onSignedIn runs once a token is kept, to reload with it.
export function initAuth(onSignedIn) {
  signedIn = onSignedIn;
  onUnauthorized(needToken);
  $("signin-form").addEventListener("submit", submitSignin);
  $("signin-cancel").addEventListener("click", () => signin.close("cancel"));
  signin.addEventListener("close", () => {
    // "Not now", or Escape: stop asking until the user clicks Sign in.
    if (signin.returnValue !== "signed-in") signinPutOff = true;
    $("signin-token").value = "";
  });
  $("signin-open").addEventListener("click", () => {
    signinPutOff = false;
    openSignin("This baton asks for a token for its API.");
  });
  $("signout").addEventListener("click", signOut);
  renderAuth();
}
