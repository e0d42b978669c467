// The bearer token, when baton runs with --auth-file.
//
// It lives in sessionStorage: it survives a reload of this tab and dies
// with the tab. localStorage would keep it on disk for every tab and after
// the browser closes; a URL would put it in logs, history and Referer.

const TOKEN_KEY = "baton.token";

// storedToken is this tab's token, or "".
export function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return ""; // storage disabled: the token lives in no storage at all
  }
}

// storeToken keeps token for this tab; "" forgets it.
export function storeToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage disabled: nothing to keep the token in; requests go without.
  }
}

// authHeaders adds the Authorization header to headers when there is a
// token.
export function authHeaders(headers) {
  const token = storedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}
