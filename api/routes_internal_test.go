package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// A row that says neither who may call it nor that anyone may must keep
// the server from starting.
func TestRegister_RefusesARouteWithoutAnAccessDecision(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "GET /v1/undecided") {
			t.Errorf("recovered %q, want a panic naming the route", r)
		}
	}()
	a := &API{}
	a.Register(echo.New(), []Route{{Method: http.MethodGet, Path: "/v1/undecided", Handler: a.healthz}})
}

// Every v1 route but /v1/cluster needs a leader and checks its query;
// the probes check neither.
func TestRoutes_LeaderAndQueryChecksAreWhereTheyBelong(t *testing.T) {
	for _, r := range (&API{}).Routes() {
		v1 := strings.HasPrefix(r.Path, "/v1/")
		if want := v1 && r.Path != "/v1/cluster"; r.Leader != want {
			t.Errorf("%s %s: Leader %v, want %v", r.Method, r.Path, r.Leader, want)
		}
		if r.AnyQuery == v1 {
			t.Errorf("%s %s: AnyQuery %v, want %v", r.Method, r.Path, r.AnyQuery, !v1)
		}
	}
}
