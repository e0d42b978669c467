"""One HTTP attempt, and the retry loop over the endpoints.

http.client rather than urllib.request: the retry rules need to tell a
connection that could not be made (the request never left: safe to send
anywhere) from one that broke after the request was written (it may have
taken effect). Each attempt uses a new connection, so a pooled connection
that the server closed while idle can never make a request ambiguous.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass

from ._bearer import Bearer
from .errors import BatonError, UnavailableError, error_class
from .types import Problem, decode

USER_AGENT = "baton-python-client/1"
MAX_BACKOFF = 5.0
MAX_RETRY_AFTER = 30.0
MAX_ERROR_BODY = 64 << 10


@dataclass
class Endpoint:
    scheme: str
    host: str
    port: int
    path: str  # base path, without a trailing slash

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.path}"


def parse_endpoint(s: str) -> Endpoint:
    s = s.strip()
    if "://" not in s:
        s = "http://" + s
    u = urllib.parse.urlsplit(s)
    if u.scheme not in ("http", "https") or not u.hostname or u.query or u.fragment or u.username:
        raise ValueError(f"baton client: endpoint {s!r}: want http(s)://host:port, optionally with a path")
    port = u.port or (443 if u.scheme == "https" else 80)
    return Endpoint(u.scheme, u.hostname, port, u.path.rstrip("/"))


@dataclass
class Attempt:
    """Why one attempt failed."""

    err: BatonError
    retryable: bool = False  # a node's trouble, not an answer about the request
    sent: bool = False  # the request may have reached the server
    settled: bool = False  # the server answered, not with a 5xx
    retry_after: float = 0.0


def parse_retry_after(h: str | None) -> float | None:
    h = (h or "").strip()
    if not h:
        return None
    if h.isdigit():
        return float(h) if int(h) > 0 else None
    try:
        t = email.utils.parsedate_to_datetime(h)
        return max(t.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def is_json(ct: str | None) -> bool:
    mt = (ct or "").split(";")[0].strip().lower()
    return mt == "application/json" or mt.endswith("+json")


def decode_error(status: int, reason: str, headers, body: bytes) -> BatonError:
    """Reads an error answer. Whatever the body, the error says at least
    the status; a body that is no problem document is quoted briefly."""
    retry_after = parse_retry_after(headers.get("Retry-After"))
    p = None
    if is_json(headers.get("Content-Type")):
        try:
            doc = json.loads(body)
            if isinstance(doc, dict) and doc.get("code"):
                try:
                    p = decode(Problem, doc)
                except (TypeError, ValueError):
                    # A member of an unexpected type does not hide what
                    # went wrong: keep the core.
                    p = Problem(**{k: doc.get(k) for k in ("code", "title", "detail", "field") if isinstance(doc.get(k), str)})
        except ValueError:
            pass
    if p is not None:
        if retry_after is None and isinstance(p.retry_after, int) and p.retry_after > 0:
            retry_after = float(p.retry_after)
        cls = error_class(p.code, status)
        return cls(p.detail or "", status=status, code=p.code, title=p.title or reason,
                   retry_after=retry_after, problem=p)
    detail = body.decode("utf-8", "replace").strip()
    if len(detail) > 200:
        detail = detail[:200] + "…"
    if 300 <= status < 400 and headers.get("Location"):
        detail = f"redirected to {headers.get('Location')[:200]!r}, which this client does not follow; use that URL as the endpoint"
    cls = error_class(None, status)
    return cls(detail, status=status, title=reason, retry_after=retry_after)


class Transport:
    """The endpoints and how to reach them."""

    def __init__(self, endpoints: list[Endpoint], bearer: Bearer, timeout: float, backoff: float,
                 retries: int, ssl_context: ssl.SSLContext | None):
        self.endpoints = endpoints
        self.bearer = bearer
        self.timeout = timeout
        self.backoff0 = backoff
        self.retries = retries
        self.ssl_context = ssl_context
        # The endpoint that answered last: calls start there.
        self.preferred = 0

    def backoff(self, round_: int) -> float:
        """The pause after round_ failed rounds, with jitter so that clients
        cut off together do not come back in step."""
        d = min(self.backoff0 * (2 ** min(round_, 10)), MAX_BACKOFF)
        return d / 2 + random.uniform(0, d / 2)

    def connection(self, ep: Endpoint, timeout: float) -> http.client.HTTPConnection:
        if ep.scheme == "https":
            return http.client.HTTPSConnection(ep.host, ep.port, timeout=timeout, context=self.ssl_context)
        return http.client.HTTPConnection(ep.host, ep.port, timeout=timeout)

    def headers(self, payload: bytes | None, accept: str = "application/json, application/problem+json") -> dict:
        h = {"Accept": accept, "User-Agent": USER_AGENT}
        if payload is not None:
            h["Content-Type"] = "application/json"
        token = self.bearer.token()
        if token:
            h["Authorization"] = "Bearer " + token
        return h

    def attempt(self, ep: Endpoint, method: str, target: str, payload: bytes | None, timeout: float):
        """Runs one attempt: (status, decoded body or None) or an Attempt."""
        conn = self.connection(ep, timeout)
        try:
            try:
                conn.connect()
            except ssl.SSLError as e:
                # A certificate that does not verify, or TLS against plain
                # HTTP: a configuration to fix, not a node in trouble.
                return Attempt(BatonError(f"{ep}: TLS: {e}"))
            except OSError as e:
                return Attempt(UnavailableError(f"{ep}: {_why(e)}"), retryable=True)
            try:
                conn.request(method, ep.path + target, body=payload, headers=self.headers(payload))
                resp = conn.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException) as e:
                return Attempt(UnavailableError(f"{ep}: {_why(e)}"), retryable=True, sent=True)
        finally:
            conn.close()
        if not 200 <= resp.status <= 299:
            err = decode_error(resp.status, resp.reason, resp.headers, body[:MAX_ERROR_BODY])
            return Attempt(err, sent=True, settled=resp.status < 500, retry_after=err.retry_after or 0.0,
                           retryable=resp.status in (502, 503, 504))
        if resp.status == 204 or not body:
            return resp.status, None
        try:
            return resp.status, json.loads(body)
        except ValueError as e:
            return Attempt(BatonError(f"{ep} answered {resp.status} with a body that is not JSON: {e}"),
                           sent=True, settled=True)

    def do(self, op: str, method: str, path: str, *, query: dict | None = None, body=None,
           idempotent: bool = False, timeout: float | None = None, deadline: float | None = None):
        """Runs a call, retrying as its idempotency allows: idempotent calls
        on 502/503/504 and broken connections, up to self.retries times,
        on the next endpoint, pausing with backoff (or Retry-After, when
        longer) after each full round; others only when the connection
        could not be made. deadline (time.monotonic) bounds it all.
        Returns (status, decoded body)."""
        payload = None if body is None else json.dumps(body).encode()
        target = path
        q = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        if q:
            target += "?" + urllib.parse.urlencode(q, doseq=True)
        n = len(self.endpoints)
        start = self.preferred
        unsettled = False
        reread = False  # the token file was read again after a 401
        attempt = 0
        while True:
            i = (start + attempt) % n
            t = timeout or self.timeout
            if deadline is not None:
                t = min(t, deadline - time.monotonic())
                if t <= 0:
                    raise UnavailableError(f"{op}: no answer before the deadline", op=op)
            r = self.attempt(self.endpoints[i], method, target, payload, t)
            if not isinstance(r, Attempt):
                self.preferred = i
                return r
            # A 401 did nothing: with a new token from the file, the same
            # node is asked again, once, whatever the call.
            if r.err.status == 401 and not reread and self.bearer.reload():
                reread = True
                continue
            err = r.err
            err.op = op
            err.args = (err._message(),)
            if unsettled and r.settled:
                err.detail = (err.detail or err.title) + " (an earlier attempt got no answer and may have taken effect)"
                err.args = (err._message(),)
            if not idempotent and r.sent and not r.settled:
                err.outcome_unknown = True
                raise err
            if not r.retryable:
                raise err
            # The next call starts on the next node: this one is in trouble.
            if self.preferred == i:
                self.preferred = (i + 1) % n
            if not idempotent and attempt + 1 >= n:
                raise err  # every node refused the connection
            if idempotent and attempt >= self.retries:
                raise err
            unsettled = unsettled or r.sent
            if (attempt + 1) % n == 0:
                wait = max(self.backoff((attempt + 1) // n - 1), min(r.retry_after, MAX_RETRY_AFTER))
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise err
                time.sleep(wait)
            attempt += 1


def _why(e: BaseException) -> str:
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "no answer within the request timeout"
    return str(e) or type(e).__name__
