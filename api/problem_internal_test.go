package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/problem"
)

// A sentinelCase is an error as the engine, authentication or echo
// raise it, and the answer it must get.
type sentinelCase struct {
	name       string
	err        error
	status     int
	code       string
	check      func(t *testing.T, p *Problem)
	unexpected bool
}

const etcdMsg = "etcdserver: request timed out"

// sentinelCases are made here by hand: the table sits in front of etcd
// and needs none to be tested.
func sentinelCases() []sentinelCase {
	held := &lock.HeldError{Holder: &lock.Lock{Name: "a", Owner: "w1", Token: 7, TTL: 30 * time.Second}, Reason: `held by "w1"`}
	delayed := &lock.HeldError{RetryAfter: 1500 * time.Millisecond, Reason: "lock-delay"}
	return []sentinelCase{
		{name: "invalid", err: &lock.InvalidError{Field: "ttl", Reason: "must be between 2s and 24h0m0s"}, status: 400, code: "invalid_request",
			check: func(t *testing.T, p *Problem) {
				if p.Field != "ttl" || !strings.Contains(p.Detail, "ttl") {
					t.Errorf("field %q detail %q, want ttl named", p.Field, p.Detail)
				}
			}},
		{name: "bare ErrInvalid", err: lock.ErrInvalid, status: 400, code: "invalid_request"},
		{name: "held without details", err: lock.ErrHeld, status: 409, code: "lock_held",
			check: func(t *testing.T, p *Problem) {
				if p.Holder != nil || p.RetryAfter != 0 {
					t.Errorf("holder %+v retry_after %d, want neither", p.Holder, p.RetryAfter)
				}
			}},
		{name: "held with holder", err: held, status: 409, code: "lock_held",
			check: func(t *testing.T, p *Problem) {
				if p.Holder == nil || p.Holder.Name != "a" || p.Holder.Owner != "w1" || p.Holder.Token != 7 || p.Holder.TTL != "30s" {
					t.Errorf("holder %+v, want w1's lock a with token 7", p.Holder)
				}
			}},
		{name: "lock-delay", err: delayed, status: 409, code: "lock_held",
			check: func(t *testing.T, p *Problem) {
				if p.RetryAfter != 2 || p.Holder != nil {
					t.Errorf("retry_after %d holder %+v, want 2 (1.5s rounded up) and no holder", p.RetryAfter, p.Holder)
				}
			}},
		{name: "token mismatch", err: lock.ErrTokenMismatch, status: 409, code: "token_mismatch"},
		{name: "stale token", err: &lock.StaleTokenError{Token: 3, MaxToken: 9}, status: 409, code: "stale_token",
			check: func(t *testing.T, p *Problem) {
				if p.MaxToken != 9 {
					t.Errorf("max_token %d, want 9", p.MaxToken)
				}
			}},
		{name: "not holder", err: lock.ErrNotHolder, status: 409, code: "not_holder"},
		{name: "not held", err: lock.ErrNotHeld, status: 404, code: "not_held"},
		{name: "session not found", err: lock.ErrSessionNotFound, status: 404, code: "session_not_found"},
		{name: "fenced not found", err: lock.ErrNotFound, status: 404, code: "not_found"},
		{name: "etcd unavailable", err: fmt.Errorf("get lock: %w (%v)", lock.ErrUnavailable, errors.New(etcdMsg)), status: 503, code: "unavailable",
			check: func(t *testing.T, p *Problem) {
				if p.RetryAfter < 1 || strings.Contains(p.Detail, etcdMsg) {
					t.Errorf("retry_after %d detail %q, want a retry hint in our own words", p.RetryAfter, p.Detail)
				}
			}},
		{name: "engine closed", err: lock.ErrClosed, status: 503, code: "shutting_down",
			check: func(t *testing.T, p *Problem) {
				if p.RetryAfter < 1 {
					t.Errorf("retry_after %d, want a retry hint", p.RetryAfter)
				}
			}},
		{name: "client went away", err: context.Canceled, status: 499, code: "client_closed_request"},
		{name: "no credential", err: fmt.Errorf("%w: send Authorization: Bearer TOKEN", auth.ErrUnauthorized), status: 401, code: "unauthorized"},
		{name: "role too weak", err: &auth.RoleError{Need: auth.Admin, Have: auth.Write}, status: 403, code: "forbidden",
			check: func(t *testing.T, p *Problem) {
				if !strings.Contains(p.Detail, "admin role") {
					t.Errorf("detail %q does not name the role needed", p.Detail)
				}
			}},
		{name: "another credential's hold", err: lock.ErrNotOwner, status: 403, code: "forbidden"},
		{name: "problem passes through", err: badRequest("limit", "limit must be an integer"), status: 400, code: "invalid_request",
			check: func(t *testing.T, p *Problem) {
				if p.Field != "limit" || p.Detail != "limit must be an integer" {
					t.Errorf("problem changed: %+v", p)
				}
			}},
		{name: "echo route not found", err: echo.ErrNotFound, status: 404, code: "route_not_found"},
		{name: "echo method not allowed", err: echo.ErrMethodNotAllowed, status: 405, code: "method_not_allowed"},
		{name: "echo body too large", err: echo.NewHTTPError(http.StatusRequestEntityTooLarge), status: 413, code: "body_too_large"},
		{name: "echo unsupported media type", err: echo.ErrUnsupportedMediaType, status: 415, code: "unsupported_media_type"},
		{name: "unplanned error", err: errors.New("boom: secret internals"), status: 500, code: "internal", unexpected: true,
			check: func(t *testing.T, p *Problem) {
				if strings.Contains(p.Detail, "boom") {
					t.Errorf("detail %q leaks the error", p.Detail)
				}
			}},
	}
}

func TestErrorTable_MapsEverySentinelWrappedOrNot(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("acquire %q: %w", "a", fmt.Errorf("txn: %w", err)) }
	for _, tc := range sentinelCases() {
		for _, variant := range []struct {
			name string
			err  error
		}{{"bare", tc.err}, {"wrapped", wrap(tc.err)}} {
			t.Run(tc.name+"/"+variant.name, func(t *testing.T) {
				p, known := toProblem(variant.err, errorTable)
				if known == tc.unexpected {
					t.Errorf("known = %v, want %v", known, !tc.unexpected)
				}
				if p.Status != tc.status || p.Code != tc.code || p.Type != ProblemType(tc.code) || p.Title == "" || p.Detail == "" {
					t.Fatalf("problem %+v, want status %d code %q with type, title and detail", p, tc.status, tc.code)
				}
				if tc.check != nil {
					tc.check(t, p)
				}
			})
		}
	}
}

func TestErrorTable_NoRowShadowsAnother(t *testing.T) {
	for _, row := range errorTable {
		p, known := toProblem(fmt.Errorf("context: %w", row.Err), errorTable)
		status := row.Status
		if status == 0 {
			status = problem.Get(row.Code).Status
		}
		if !known || p.Code != string(row.Code) || p.Status != status {
			t.Errorf("%v maps to %d %s, want its own row %d %s", row.Err, p.Status, p.Code, status, row.Code)
		}
		if row.Detail != "" && p.Detail != row.Detail || row.RetryAfter > 0 && p.RetryAfter != ceilSeconds(row.RetryAfter) {
			t.Errorf("%v: detail %q retry_after %d, want the row's %q and %v", row.Err, p.Detail, p.RetryAfter, row.Detail, row.RetryAfter)
		}
	}
}

// render runs ErrorHandler on err for a request with method.
func render(t *testing.T, method string, err error) (*httptest.ResponseRecorder, string) {
	t.Helper()
	var logs bytes.Buffer
	e := echo.New()
	req := httptest.NewRequest(method, "/v1/locks/a", nil)
	rec := httptest.NewRecorder()
	ErrorHandler(slog.New(slog.NewTextHandler(&logs, nil)))(err, e.NewContext(req, rec))
	return rec, logs.String()
}

func TestErrorHandler_WritesProblemJSONWithRetryAfter(t *testing.T) {
	rec, logs := render(t, "POST", fmt.Errorf("acquire: %w", &lock.HeldError{RetryAfter: 3 * time.Second, Reason: "lock-delay"}))
	if rec.Code != 409 || rec.Header().Get("Content-Type") != "application/problem+json" || rec.Header().Get("Retry-After") != "3" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
	var p Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Code != "lock_held" || p.RetryAfter != 3 || p.Status != 409 {
		t.Fatalf("body %s (%v)", rec.Body, err)
	}
	if logs != "" {
		t.Errorf("a planned 4xx was logged: %s", logs)
	}
}

func TestErrorHandler_LogsOnlyWhatNobodyPlannedFor(t *testing.T) {
	for _, tc := range []struct {
		err     error
		wantLog string
	}{
		{lock.ErrNotHeld, ""},
		{fmt.Errorf("acquire: %w", context.Canceled), ""},
		{fmt.Errorf("get: %w", lock.ErrUnavailable), "request failed"},
		{errors.New("boom"), "unexpected error"},
	} {
		_, logs := render(t, "GET", tc.err)
		if tc.wantLog == "" && logs != "" || tc.wantLog != "" && !strings.Contains(logs, tc.wantLog) {
			t.Errorf("%v logged %q, want %q", tc.err, logs, tc.wantLog)
		}
	}
}

func TestErrorHandler_HeadGetsStatusWithoutBody(t *testing.T) {
	rec, _ := render(t, "HEAD", lock.ErrNotHeld)
	if rec.Code != 404 || rec.Body.Len() != 0 {
		t.Fatalf("HEAD answered %d with %q", rec.Code, rec.Body)
	}
}

func TestErrorHandler_LeavesACommittedResponseAlone(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest("GET", "/", nil), rec)
	_ = c.String(http.StatusOK, "done")
	ErrorHandler(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))(lock.ErrNotHeld, c)
	if rec.Code != 200 || rec.Body.String() != "done" {
		t.Fatalf("committed response changed: %d %q", rec.Code, rec.Body)
	}
}

func TestErrorHandler_401CarriesABearerChallenge(t *testing.T) {
	rec, logs := render(t, "GET", fmt.Errorf("%w: no Authorization header", auth.ErrUnauthorized))
	if rec.Code != 401 || rec.Header().Get("WWW-Authenticate") != `Bearer realm="baton"` {
		t.Fatalf("status %d, WWW-Authenticate %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	if logs != "" {
		t.Errorf("a 401 was logged as an error: %s", logs)
	}
	rec, _ = render(t, "DELETE", fmt.Errorf("release: %w", lock.ErrNotOwner))
	if rec.Code != 403 || rec.Header().Get("WWW-Authenticate") != "" {
		t.Fatalf("ErrNotOwner: status %d, WWW-Authenticate %q; want 403 without a challenge", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
}
