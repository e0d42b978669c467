package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultAddr is the endpoint DefaultConfig uses when BATON_ADDR is unset:
// where `baton` listens by default.
const DefaultAddr = "http://127.0.0.1:8080"

// Defaults of Config.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultRetryBackoff = 200 * time.Millisecond
)

const (
	// maxBackoff caps the client's own backoff between rounds of retries.
	maxBackoff = 5 * time.Second
	// maxRetryAfter caps how long a server's Retry-After may make a call
	// wait: a misbehaving proxy must not park a call for an hour.
	maxRetryAfter = 30 * time.Second
	// maxErrorBody bounds how much of an error answer is read.
	maxErrorBody = 64 << 10
	userAgent    = "baton-go-client/1"
)

// Config configures a Client. Start from DefaultConfig.
type Config struct {
	// Endpoints are the base URLs of baton nodes, such as
	// "http://10.0.0.1:8080"; "host:port" means http. Calls go to the node
	// that answered last and move on to the next one when a node is down.
	Endpoints []string
	// HTTPClient makes the requests; nil means a client of our own. Leave
	// its Timeout at 0: Timeout below bounds each request instead, and an
	// event stream must be able to live longer than any timeout. Calls
	// that must not be repeated go on new connections, through a copy of
	// its transport without keep-alives, when that is an *http.Transport.
	HTTPClient *http.Client
	// Token, when set, is sent as "Authorization: Bearer <Token>": the
	// bearer token of a node that runs with --auth-file. (Not a fencing
	// token, which identifies a hold.)
	Token string
	// TokenFile, when set and Token is empty, is read by NewWithConfig;
	// its content, trimmed, is the bearer token. The client reads it
	// again after TokenFileMaxAge and when a node answers 401, so a token
	// its issuer replaces in the file (a JWT that expires) is sent fresh.
	TokenFile string
	// TLSConfig is the TLS for https:// endpoints: a CA to trust and a
	// client certificate. It applies to the client's own transport, so it
	// cannot be combined with HTTPClient (configure that one's transport).
	TLSConfig TLSConfig
	// Timeout bounds each attempt of a request; 0 means DefaultTimeout. An
	// acquire's attempt gets its Wait on top, and an event stream is bound
	// by it only until the server starts answering.
	Timeout time.Duration
	// RetryBackoff is the first pause between rounds of retries over the
	// endpoints; it doubles each round, up to 5s. 0 means
	// DefaultRetryBackoff. A Retry-After from the server is honoured when
	// it asks for longer.
	RetryBackoff time.Duration
	// MaxRetries bounds how often a call that is safe to repeat is retried
	// after its first attempt; the context bounds it too. 0 means the
	// number of endpoints plus 2; negative means never retry.
	MaxRetries int
	// MaxRequestWait is the longest wait one acquire request carries; 0
	// means MaxRequestWait, the server's cap. A longer Wait is a run of
	// requests (see MaxRequestWait).
	MaxRequestWait time.Duration
}

// DefaultConfig returns the configuration that the environment describes,
// as the CLI reads it:
//
//   - BATON_ADDR: comma-separated endpoints (default DefaultAddr);
//   - BATON_AUTH_TOKEN: the bearer token;
//   - BATON_TOKEN_FILE: a file holding the bearer token, read when
//     BATON_AUTH_TOKEN is unset;
//   - BATON_CACERT: a PEM file of CAs to trust besides the system's;
//   - BATON_CERT, BATON_KEY: a client certificate and its key.
//
// The bearer token's variable is not BATON_TOKEN: "baton exec" gives its
// command the fencing token of its lock under that name, and a baton
// client run by that command must not send it as its credential.
//
// It never fails: a token file or TLS file that cannot be read makes
// NewWithConfig fail.
func DefaultConfig() Config {
	cfg := Config{
		Endpoints:    []string{DefaultAddr},
		Timeout:      DefaultTimeout,
		RetryBackoff: DefaultRetryBackoff,
	}
	if v := os.Getenv("BATON_ADDR"); strings.TrimSpace(v) != "" {
		cfg.Endpoints = nil
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				cfg.Endpoints = append(cfg.Endpoints, e)
			}
		}
	}
	cfg.Token = strings.TrimSpace(os.Getenv("BATON_AUTH_TOKEN"))
	cfg.TokenFile = os.Getenv("BATON_TOKEN_FILE")
	cfg.TLSConfig = TLSConfig{CAFile: os.Getenv("BATON_CACERT"), CertFile: os.Getenv("BATON_CERT"), KeyFile: os.Getenv("BATON_KEY")}
	return cfg
}

// Client talks to a baton cluster over HTTP. It is safe for concurrent use.
type Client struct {
	hc *http.Client
	// fresh sends the calls that must not be repeated, each on a new
	// connection: on a pooled one that the server has just closed (idle,
	// or restarting) the request fails after it was written, and the
	// client could no longer tell that the server never saw it. A new
	// connection either cannot be made (safe to try another node) or
	// carries the request to a server that accepted it.
	fresh     *http.Client
	endpoints []string // base URLs, without a trailing slash
	bearer    *bearer
	timeout   time.Duration
	backoff0  time.Duration
	maxWait   time.Duration // Config.MaxRequestWait
	retries   int
	// preferred is the index of the endpoint that answered last: calls
	// start there, so a cluster with a dead node costs one failed dial per
	// change of node, not one per call.
	preferred atomic.Int64
	// watch streams the audit trail for the locks held, so that a revoke
	// or an expiry reaches Lock.Lost at once.
	watch holdWatcher
}

// New returns a client configured by DefaultConfig, with endpoints instead
// of BATON_ADDR's when any are given.
func New(endpoints ...string) (*Client, error) {
	cfg := DefaultConfig()
	if len(endpoints) > 0 {
		cfg.Endpoints = endpoints
	}
	return NewWithConfig(cfg)
}

// durations checks the client's durations as Config gave them, and puts
// the defaults in for those it left 0.
func (c *Client) durations() error {
	if c.timeout < 0 || c.backoff0 < 0 || c.maxWait < 0 || c.maxWait > MaxRequestWait {
		return fmt.Errorf("baton client: Timeout and RetryBackoff must not be negative, and MaxRequestWait must be between 0 and %s", MaxRequestWait)
	}
	if c.maxWait == 0 {
		c.maxWait = MaxRequestWait
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.backoff0 == 0 {
		c.backoff0 = DefaultRetryBackoff
	}
	return nil
}

// NewWithConfig returns a client for cfg. It fails on an endpoint that is
// not an http(s) URL and on a token or TLS file that cannot be read.
func NewWithConfig(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("baton client: no endpoints")
	}
	c := &Client{hc: cfg.HTTPClient, timeout: cfg.Timeout, backoff0: cfg.RetryBackoff, maxWait: cfg.MaxRequestWait}
	c.watch.c = c
	for _, e := range cfg.Endpoints {
		base, err := parseEndpoint(e)
		if err != nil {
			return nil, err
		}
		c.endpoints = append(c.endpoints, base)
	}
	var err error
	if c.bearer, err = newBearer(cfg.Token, cfg.TokenFile); err != nil {
		return nil, err
	}
	if err := c.durations(); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxRetries < 0:
		c.retries = 0
	case cfg.MaxRetries == 0:
		c.retries = len(c.endpoints) + 2
	default:
		c.retries = cfg.MaxRetries
	}
	if c.hc != nil && !cfg.TLSConfig.empty() {
		return nil, errors.New("baton client: TLSConfig applies to the client's own transport: set TLS on HTTPClient's transport instead, or leave HTTPClient nil")
	}
	if c.hc == nil {
		// A transport of our own, so that one client's idle connections
		// and limits are not shared with the rest of the program.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// HTTP/1.1 only: over HTTP/2 a refused TLS handshake (a node that
		// wants a client certificate) surfaces as "client conn could not be
		// established", without its cause, and looks like a request that
		// may have been sent; and the retry rules above reason about one
		// request per HTTP/1.1 connection.
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		if !cfg.TLSConfig.empty() {
			tc, err := SetupTLSConfig(cfg.TLSConfig)
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig = tc
		}
		c.hc = &http.Client{Transport: tr}
	}
	// A copy, so that the caller's client is left as it was.
	hc := *c.hc
	hc.CheckRedirect = sameMethodRedirects(hc.CheckRedirect)
	c.hc = &hc
	c.fresh = c.hc
	tr := c.hc.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	if t, ok := tr.(*http.Transport); ok {
		t = t.Clone()
		t.DisableKeepAlives = true
		f := *c.hc
		f.Transport = t
		c.fresh = &f
	}
	return c, nil
}

// Endpoints returns the endpoints' base URLs as the client uses them.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

func parseEndpoint(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("baton client: endpoint %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("baton client: endpoint %q: want http(s)://host:port, optionally with a path", s)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// request is one API call.
type request struct {
	op     string // names the call in errors: `acquire "x"`
	method string
	path   string // escaped, from the API root: /v1/locks/x
	query  url.Values
	body   any // sent as JSON when not nil
	// idempotent calls are retried on 503 and transport errors, on the
	// next endpoint. Others are retried only when the request provably
	// never left: the connection could not be made.
	idempotent bool
	timeout    time.Duration // per attempt; 0 means the client's
}

// attemptError is why one attempt failed.
type attemptError struct {
	err        error
	retryable  bool // a node's trouble, not an answer about the request
	sent       bool // the request may have reached the server
	settled    bool // the server answered, and not with a 5xx: it says what happened
	retryAfter time.Duration
}

// do runs r, retrying as its idempotency allows, and decodes a success
// answer into out. It returns the status of the answer.
func (c *Client) do(ctx context.Context, r request, out any) (int, error) {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return 0, fmt.Errorf("%s: encode request: %w", r.op, err)
		}
	}
	n := len(c.endpoints)
	start := int(c.preferred.Load())
	// unsettled records that an earlier attempt may have taken effect
	// unseen, so that a later answer such as not_held can say it may be
	// about that attempt's doing.
	unsettled := false
	reread := false // the token file was read again after a 401
	for attempt := 0; ; attempt++ {
		i := (start + attempt) % n
		status, f := c.attempt(ctx, c.endpoints[i], &r, payload, out)
		if f == nil {
			c.preferred.Store(int64(i))
			return status, nil
		}
		// A 401 did nothing: with a new token from the file, the same
		// node is asked again, once, whatever the call.
		if status == http.StatusUnauthorized && !reread && c.bearer.reload() {
			reread = true
			attempt--
			continue
		}
		err := opError(r.op, f.err)
		if unsettled && f.settled {
			err = fmt.Errorf("%w (an earlier attempt got no answer and may have taken effect)", err)
		}
		if !r.idempotent && f.sent && !f.settled {
			return status, fmt.Errorf("%w; the outcome is unknown: the request may have taken effect", err)
		}
		if ctx.Err() != nil || !f.retryable {
			return status, err
		}
		// The next call starts on the next node: this one is in trouble.
		c.preferred.CompareAndSwap(int64(i), int64((i+1)%n))
		switch {
		case !r.idempotent && attempt+1 >= n:
			return status, err // every node refused the connection
		case r.idempotent && attempt >= c.retries:
			return status, fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		unsettled = unsettled || f.sent
		// A node not yet tried in this round is tried at once; a full
		// round of failures earns a pause, so a cluster without a leader
		// is not hammered.
		if (attempt+1)%n == 0 {
			round := (attempt + 1) / n
			wait := max(c.backoff(round-1), min(f.retryAfter, maxRetryAfter))
			if err := sleep(ctx, wait); err != nil {
				return status, fmt.Errorf("%w (while waiting to retry: %w)", opError(r.op, f.err), err)
			}
		}
	}
}

// opError names the call op in err: a server's answer carries it as its
// Op, any other error gets it as a prefix.
func opError(op string, err error) error {
	if e, ok := err.(*Error); ok && e.Op == "" {
		e.Op = op
		return e
	}
	return fmt.Errorf("%s: %w", op, err)
}

// backoff is the pause after the given number of failed rounds, with
// jitter so that clients cut off together do not come back in step.
func (c *Client) backoff(round int) time.Duration {
	d := c.backoff0
	for range min(round, 10) {
		d *= 2
	}
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

func (c *Client) attempt(ctx context.Context, base string, r *request, payload []byte, out any) (int, *attemptError) {
	timeout := r.timeout
	if timeout == 0 {
		timeout = c.timeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := c.newRequest(actx, base, r.method, r.path, r.query, payload)
	if err != nil {
		return 0, &attemptError{err: err, settled: true}
	}
	hc := c.hc
	if !r.idempotent {
		hc = c.fresh
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, transportError(ctx, base, err)
	}
	defer drainClose(resp.Body)
	// Only a 2xx is a success. A 3xx here is a redirect this client did
	// not follow (sameMethodRedirects): the request never reached baton,
	// so it is an error, never a release or acquire that happened.
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := decodeError(resp)
		return resp.StatusCode, &attemptError{
			err: e, retryAfter: e.RetryAfter, sent: true, settled: resp.StatusCode < 500,
			retryable: resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout,
		}
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		// The body is read whole before it is decoded, so that a
		// connection cut mid-answer (the node's trouble: unavailable,
		// retried) is told apart from a whole answer that is not what the
		// API describes (settled): a decoder reading the stream reports
		// both alike.
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return resp.StatusCode, &attemptError{err: fmt.Errorf("%w: %s: reading the answer: %w", ErrUnavailable, base, err), retryable: true, sent: true}
		}
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, &attemptError{err: fmt.Errorf("%s answered %d with a body that is not what the API describes: %w", base, resp.StatusCode, err), sent: true, settled: true}
		}
	}
	return resp.StatusCode, nil
}

// sameMethodRedirects follows a redirect only when the request keeps its
// method (307 and 308; 301, 302 and 303 for reads), then as next says.
//
// net/http turns a DELETE or POST redirected with 301, 302 or 303 into a
// GET, which would read the lock where a release or acquire was asked
// for. Such a redirect ends the call instead, with the 3xx as an *Error.
func sameMethodRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.Method != via[0].Method {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

func (c *Client) newRequest(ctx context.Context, base, method, path string, q url.Values, payload []byte) (*http.Request, error) {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload) // rewindable: the transport may resend it on a stale connection
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", userAgent)
	if tok := c.bearer.token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

// transportError classifies a failure to get an answer at all.
func transportError(ctx context.Context, base string, err error) *attemptError {
	if ctx.Err() != nil {
		// The caller gave up; not the node's fault.
		return &attemptError{err: err, sent: !isDialError(err)}
	}
	if tlsRefused(err) {
		// A certificate that does not verify, a node that will not take
		// ours, or TLS against plain HTTP: a configuration to fix, not a
		// node in trouble, so neither retried nor ErrUnavailable. The node
		// never read the request.
		return &attemptError{err: fmt.Errorf("%s: TLS: %w", base, err)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within the request timeout: %w", err)
	}
	return &attemptError{err: fmt.Errorf("%w: %s: %w", ErrUnavailable, base, err), retryable: true, sent: !isDialError(err)}
}

// tlsRefused reports whether the TLS handshake failed on a certificate or
// protocol mismatch: ours did not verify theirs (or they speak plain
// HTTP), or theirs sent an alert, such as "certificate required".
func tlsRefused(err error) bool {
	var ve *tls.CertificateVerificationError
	var re tls.RecordHeaderError
	var oe *net.OpError
	return errors.As(err, &ve) || errors.As(err, &re) || errors.Is(err, http.ErrSchemeMismatch) ||
		errors.As(err, &oe) && oe.Op == "remote error"
}

// isDialError reports whether err happened while connecting, before a
// byte of the request was written: only then is a retry of a call that is
// not idempotent safe.
func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// drainClose reads what is left of a body (a little) and closes it, so the
// connection goes back to the pool instead of being torn down.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	_ = body.Close()
}

// sleep waits for d or until ctx ends, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isJSON reports whether a Content-Type is JSON of any kind
// (application/json, application/problem+json).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func pathEscape(s string) string { return url.PathEscape(s) }
