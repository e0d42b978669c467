"""The problem codes baton answers with, kept by hand from problem/problem.go.

tests/test_problems.py parses problem.go and fails when a code there is
missing here, or has another status or retry class, so that a code added
to the server cannot go unnoticed by this client.
"""

# What a caller may do about a problem, as problem.Retry says.
FINAL = "final"  # the answer is about the request itself
LATER = "later"  # a cap that clears by itself: any request may be sent again later
ELSEWHERE = "elsewhere"  # this node could not serve it: idempotent requests move on

# (code, HTTP status, title, retry), in problem.go's order.
TABLE = [
    ("invalid_request", 400, "Invalid request", FINAL),
    ("body_too_large", 413, "Request body too large", FINAL),
    ("value_too_large", 413, "Value too large", FINAL),
    ("unsupported_media_type", 415, "Unsupported media type", FINAL),
    ("route_not_found", 404, "No such route", FINAL),
    ("method_not_allowed", 405, "Method not allowed", FINAL),
    ("lock_held", 409, "Lock held", FINAL),
    ("not_held", 404, "Lock not held", FINAL),
    ("token_mismatch", 409, "Token does not hold the lock", FINAL),
    ("stale_token", 409, "Stale fencing token", FINAL),
    ("not_holder", 409, "Token does not hold the named lock", FINAL),
    ("unknown_token", 409, "Token never issued", FINAL),
    ("session_not_found", 404, "Session not found", FINAL),
    ("not_found", 404, "Not found", FINAL),
    ("not_delayed", 404, "Lock not delayed", FINAL),
    ("election_held", 409, "Election has a leader", FINAL),
    ("no_leader", 404, "No leader", FINAL),
    ("candidate_not_waiting", 409, "Candidate not waiting", FINAL),
    ("semaphore_full", 409, "Semaphore full", FINAL),
    ("limit_mismatch", 409, "Semaphore held under another limit", FINAL),
    ("key_not_found", 404, "Key not found", FINAL),
    ("revision_mismatch", 409, "Revision mismatch", FINAL),
    ("too_many_waiters", 429, "Too many waiters for the lock", LATER),
    ("too_many_locks_in_session", 409, "Too many locks in the session", FINAL),
    ("too_many_sessions", 429, "Too many sessions", LATER),
    ("too_many_locks", 429, "Too many locks held", LATER),
    ("too_many_fenced_values", 429, "Too many fenced values", LATER),
    ("too_many_keys", 507, "Too many keys", FINAL),
    ("too_many_streams", 429, "Too many event streams", LATER),
    ("rate_limited", 429, "Too many requests", LATER),
    ("quota_exceeded", 429, "Quota exceeded", LATER),
    ("unauthorized", 401, "Unauthorized", FINAL),
    ("forbidden", 403, "Forbidden", FINAL),
    ("cross_origin", 403, "Cross-origin request refused", FINAL),
    ("host_not_allowed", 421, "Host not allowed", FINAL),
    ("unavailable", 503, "Service unavailable", ELSEWHERE),
    ("shutting_down", 503, "Node shutting down", ELSEWHERE),
    ("insufficient_storage", 507, "Data store full", FINAL),
    ("still_full", 409, "Data store still full", FINAL),
    ("nospace", 503, "Data store full", FINAL),
    ("client_closed_request", 499, "Client closed request", FINAL),
    ("internal", 500, "Internal error", FINAL),
]

BY_CODE = {code: (status, title, retry) for code, status, title, retry in TABLE}
