package chaos

// Op is one client operation as the workload saw it: one HTTP request,
// never retried, so that it happened at most once.
type Op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Node   int    `json:"node"`
	Kind   Kind   `json:"kind"`
	Lock   string `json:"lock"` // the lock; fput and fget use the fenced resource of the same name
	Owner  string `json:"owner,omitempty"`
	Token  int64  `json:"token,omitempty"` // the token sent (renew, release, fput)
	Value  string `json:"value,omitempty"` // the value sent (fput)

	// Call and Return are nanoseconds since the run began. An Unknown
	// op's Return is when its client gave up; the checker treats it as
	// pending until the end of the history.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`

	Result   Result `json:"result"`
	OutToken int64  `json:"out_token,omitempty"` // acquire ok: the token granted; get ok: the holder's; fget ok: the stored one
	OutOwner string `json:"out_owner,omitempty"` // get ok: the holder
	OutValue string `json:"out_value,omitempty"` // fget ok: the stored value (the workload writes strings)
	Status   int    `json:"status,omitempty"`    // HTTP status; 0 when none came
	Code     string `json:"code,omitempty"`      // problem+json code
	Err      string `json:"err,omitempty"`       // transport error
	// RetryAfter is the Retry-After header of a 503.
	RetryAfter string `json:"retry_after,omitempty"`
}

// Kind is what an Op asked for.
type Kind string

// The kinds of Op.
const (
	Acquire Kind = "acquire" // POST /v1/locks/{name}, no wait
	Renew   Kind = "renew"   // POST /v1/locks/{name}/renew {"token":…}
	Release Kind = "release" // DELETE /v1/locks/{name}?token=
	Get     Kind = "get"     // GET /v1/locks/{name}
	FPut    Kind = "fput"    // PUT /v1/fenced/{name}
	FGet    Kind = "fget"    // GET /v1/fenced/{name}
)

// Result is what came of an Op.
type Result string

// The results of an Op.
const (
	// OK is a 2xx: it took effect (for get and fget: it read that).
	OK Result = "ok"
	// Rejected is a definite refusal that changed nothing: 409 lock_held
	// for acquire; 404 not_held or 409 token_mismatch for renew and
	// release; 409 stale_token for fput; 404 not_held or not_found for
	// get and fget (nothing there).
	Rejected Result = "rejected"
	// Unknown is an op that may or may not have taken effect: no answer
	// before the client's timeout, a connection cut after the request
	// was sent, or a 503 (an etcd timeout can come after a commit).
	Unknown Result = "unknown"
	// Failed is an op that certainly did not reach etcd: the connection
	// was refused. The checker leaves it out.
	Failed Result = "failed"
)

// AuditEvent is one event of GET /v1/history.
type AuditEvent struct {
	Revision int64  `json:"revision"`
	Type     string `json:"type"`
	Lock     string `json:"lock"`
	Owner    string `json:"owner"`
	Token    int64  `json:"token"`
}
