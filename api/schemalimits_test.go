package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/baton-dev/baton/openapi"
	"github.com/baton-dev/baton/tests/contract"
	"github.com/baton-dev/baton/tests/testserver"
)

// limitCase is a request just inside or just outside one bound that the
// OpenAPI document states as a schema keyword.
type limitCase struct {
	limit        string
	method, path string
	body         string
	// field is the member or parameter the bound is on; outside, both
	// the server's 400 and the document's refusal name it.
	field  string
	inside bool
	// status is the answer inside (201 when 0): anything but a 400.
	status int
}

// TestSchemaLimits_AgreeWithTheServer sends each request to a real server
// and checks it against the published document: inside a bound, both take
// it; outside, the server answers 400 problem+json naming the field, and
// the document refuses it, naming the same field. A keyword the server
// does not enforce, or a bound the document leaves out, fails here.
func TestSchemaLimits_AgreeWithTheServer(t *testing.T) {
	s := newTestServer(t)
	var cases []limitCase
	cases = append(cases, nameCases()...)
	cases = append(cases, pageCases()...)
	cases = append(cases, bodyCases(s)...)
	cases = append(cases, closedBodyCases(t)...)
	for _, c := range cases {
		what := fmt.Sprintf("%s, %s: %s %.80s %.80s", c.limit, map[bool]string{true: "inside", false: "outside"}[c.inside], c.method, c.path, c.body)
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		docErr := contract.Request(req, []byte(c.body))
		r := s.Do(c.method, c.path, c.body)
		if c.inside {
			want := c.status
			if want == 0 {
				want = http.StatusCreated
			}
			if docErr != nil {
				t.Errorf("%s: the document refuses it: %v", what, docErr)
			}
			if r.Status != want {
				t.Errorf("%s: the server answered %d, want %d: %s", what, r.Status, want, r.Body)
			}
			continue
		}
		if got := refusedField(docErr); got != c.field {
			t.Errorf("%s: the document's refusal names %q, want %q: %v", what, got, c.field, docErr)
		}
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: the server answered %d, want 400: %s", what, r.Status, r.Body)
			continue
		}
		if p := testserver.WantProblem(t, r, http.StatusBadRequest, "invalid_request"); p.Field != c.field {
			t.Errorf("%s: the server's problem names %q, want %q: %s", what, p.Field, c.field, r.Body)
		}
	}
}

// refusedField is the member or parameter a refusal of the document is
// about: a parameter's name, or the first member of the body's path.
func refusedField(err error) string {
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return ""
	}
	if re.Parameter != nil {
		return re.Parameter.Name
	}
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		return ""
	}
	if p := se.JSONPointer(); len(p) > 0 {
		return p[0]
	}
	// An unknown member is refused by its object, which the pointer names.
	if m := regexp.MustCompile(`^property "(.*)" is unsupported$`).FindStringSubmatch(se.Reason); m != nil {
		return m[1]
	}
	return ""
}

// name is a valid name of n characters, unique per prefix p.
func name(p string, n int) string { return p + strings.Repeat("x", n-len(p)) }

// nameCases: names are 1-128 of A-Z a-z 0-9 . _ : -, wherever the path
// names one, and a listing's prefix is a name's beginning.
func nameCases() []limitCase {
	var cs []limitCase
	for _, k := range []struct{ path, body string }{
		{"/v1/locks/", `{}`},
		{"/v1/semaphores/", `{"limit":1}`},
		{"/v1/rwlocks/", `{"mode":"write"}`},
	} {
		cs = append(cs,
			limitCase{limit: "name length", method: "POST", path: k.path + name("n1", 128), body: k.body, field: "name", inside: true},
			limitCase{limit: "name length", method: "POST", path: k.path + name("n2", 129), body: k.body, field: "name"},
			limitCase{limit: "name charset", method: "POST", path: k.path + "a:b.c_d-E9", body: k.body, field: "name", inside: true},
			limitCase{limit: "name charset", method: "POST", path: k.path + "a%20b", body: k.body, field: "name"},
		)
	}
	cs = append(cs,
		limitCase{limit: "name length", method: "POST", path: "/v1/elections/" + name("n1", 128) + "/campaign", body: `{}`, field: "name", inside: true},
		limitCase{limit: "name length", method: "POST", path: "/v1/elections/" + name("n2", 129) + "/campaign", body: `{}`, field: "name"},
		limitCase{limit: "name charset", method: "POST", path: "/v1/elections/a%2Fb/campaign", body: `{}`, field: "name"},
		limitCase{limit: "resource length", method: "GET", path: "/v1/fenced/" + name("r", 128), field: "resource", inside: true, status: http.StatusNotFound},
		limitCase{limit: "resource length", method: "GET", path: "/v1/fenced/" + name("r", 129), field: "resource"},
		limitCase{limit: "resource charset", method: "GET", path: "/v1/fenced/r%21", field: "resource"},
	)
	for _, l := range []string{"/v1/locks", "/v1/elections", "/v1/semaphores", "/v1/rwlocks"} {
		cs = append(cs,
			limitCase{limit: "prefix", method: "GET", path: l + "?prefix=" + name("p", 128), field: "prefix", inside: true, status: http.StatusOK},
			limitCase{limit: "prefix", method: "GET", path: l + "?prefix=" + name("p", 129), field: "prefix"},
			limitCase{limit: "prefix", method: "GET", path: l + "?prefix=a%2A", field: "prefix"},
		)
	}
	return append(cs,
		limitCase{limit: "owner prefix", method: "GET", path: "/v1/sessions?prefix=" + strings.Repeat("é", 128), field: "prefix", inside: true, status: http.StatusOK},
		limitCase{limit: "owner prefix", method: "GET", path: "/v1/sessions?prefix=" + strings.Repeat("é", 129), field: "prefix"},
	)
}

// pageCases: a page is 1 to 1000 entries; history's before is a revision.
func pageCases() []limitCase {
	var cs []limitCase
	for _, l := range []string{"/v1/locks", "/v1/elections", "/v1/semaphores", "/v1/rwlocks", "/v1/sessions", "/v1/history"} {
		for _, n := range []int{1, 1000} {
			cs = append(cs, limitCase{limit: "page size", method: "GET", path: fmt.Sprintf("%s?limit=%d", l, n), field: "limit", inside: true, status: http.StatusOK})
		}
		for _, n := range []int{0, 1001} {
			cs = append(cs, limitCase{limit: "page size", method: "GET", path: fmt.Sprintf("%s?limit=%d", l, n), field: "limit"})
		}
	}
	return append(cs,
		limitCase{limit: "before", method: "GET", path: "/v1/history?before=1", field: "before", inside: true, status: http.StatusOK},
		limitCase{limit: "before", method: "GET", path: "/v1/history?before=0", field: "before"},
	)
}

// names is a lock set's names: n names, each of prefix p.
func names(p string, n int) string {
	ns := make([]string, n)
	for i := range ns {
		ns[i] = fmt.Sprintf("%s-%d", p, i)
	}
	b, _ := json.Marshal(ns)
	return string(b)
}

// metadata is n pairs.
func metadata(n int) string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// bodyCases: the bounds on members of request bodies.
func bodyCases(s *testServer) []limitCase {
	set := func(body string) string { return fmt.Sprintf(`{"names":%s}`, body) }
	s.acquire("revoked", `{}`)
	s.acquire("asked", `{}`)
	heldSet := testserver.WantJSON[struct{ Token int64 }](s.t, s.Do("POST", "/v1/locksets", set(names("released", 2))), http.StatusCreated)
	str := func(r string, n int) string { return strings.Repeat(r, n) }
	return []limitCase{
		{limit: "set size", method: "POST", path: "/v1/locksets", body: set(names("two", 2)), field: "names", inside: true},
		{limit: "set size", method: "POST", path: "/v1/locksets", body: set(names("sixty-four", 64)), field: "names", inside: true},
		{limit: "set size", method: "POST", path: "/v1/locksets", body: set(names("one", 1)), field: "names"},
		{limit: "set size", method: "POST", path: "/v1/locksets", body: set(names("sixty-five", 65)), field: "names"},
		{limit: "set names distinct", method: "POST", path: "/v1/locksets", body: set(`["same","same"]`), field: "names"},
		{limit: "set names are names", method: "POST", path: "/v1/locksets", body: set(`["good","b a d"]`), field: "names"},
		{limit: "set size", method: "POST", path: "/v1/locksets/release", body: fmt.Sprintf(`{"names":%s,"token":%d}`, names("released", 2), heldSet.Token), field: "names", inside: true, status: http.StatusNoContent},
		{limit: "set size", method: "POST", path: "/v1/locksets/release", body: `{"names":["one"],"token":1}`, field: "names"},
		{limit: "set size", method: "POST", path: "/v1/locksets/renew", body: fmt.Sprintf(`{"names":%s,"token":1}`, names("many", 65)), field: "names"},
		{limit: "metadata pairs", method: "POST", path: "/v1/locks/md16", body: fmt.Sprintf(`{"metadata":%s}`, metadata(16)), field: "metadata", inside: true},
		{limit: "metadata pairs", method: "POST", path: "/v1/locks/md17", body: fmt.Sprintf(`{"metadata":%s}`, metadata(17)), field: "metadata"},
		{limit: "owner length", method: "POST", path: "/v1/locks/o128", body: fmt.Sprintf(`{"owner":%q}`, str("é", 128)), field: "owner", inside: true},
		{limit: "owner length", method: "POST", path: "/v1/locks/o129", body: fmt.Sprintf(`{"owner":%q}`, str("é", 129)), field: "owner"},
		{limit: "owner length", method: "POST", path: "/v1/locks/o0", body: `{"owner":""}`, field: "owner"},
		{limit: "owner length", method: "POST", path: "/v1/sessions", body: fmt.Sprintf(`{"owner":%q}`, str("o", 128)), field: "owner", inside: true},
		{limit: "owner length", method: "POST", path: "/v1/sessions", body: fmt.Sprintf(`{"owner":%q}`, str("o", 129)), field: "owner"},
		{limit: "candidate length", method: "POST", path: "/v1/elections/c128/campaign", body: fmt.Sprintf(`{"candidate":%q}`, str("c", 128)), field: "candidate", inside: true},
		{limit: "candidate length", method: "POST", path: "/v1/elections/c129/campaign", body: fmt.Sprintf(`{"candidate":%q}`, str("c", 129)), field: "candidate"},
		{limit: "semaphore limit", method: "POST", path: "/v1/semaphores/l1", body: `{"limit":1}`, field: "limit", inside: true},
		{limit: "semaphore limit", method: "POST", path: "/v1/semaphores/l10000", body: `{"limit":10000}`, field: "limit", inside: true},
		{limit: "semaphore limit", method: "POST", path: "/v1/semaphores/l0", body: `{"limit":0}`, field: "limit"},
		{limit: "semaphore limit", method: "POST", path: "/v1/semaphores/l10001", body: `{"limit":10001}`, field: "limit"},
		{limit: "reason length", method: "POST", path: "/v1/locks/revoked/revoke", body: fmt.Sprintf(`{"reason":%q}`, str("r", 1025)), field: "reason"},
		{limit: "reason length", method: "POST", path: "/v1/locks/revoked/revoke", body: fmt.Sprintf(`{"reason":%q}`, str("r", 1024)), field: "reason", inside: true, status: http.StatusNoContent},
		{limit: "reason length", method: "DELETE", path: "/v1/locks/free/delay?reason=" + str("r", 1024), field: "reason", inside: true, status: http.StatusNotFound},
		{limit: "reason length", method: "DELETE", path: "/v1/locks/free/delay?reason=" + str("r", 1025), field: "reason"},
		{limit: "reason length", method: "POST", path: "/v1/locks/asked/yield", body: fmt.Sprintf(`{"reason":%q}`, str("r", 1024)), field: "reason", inside: true, status: http.StatusAccepted},
		{limit: "reason length", method: "POST", path: "/v1/locks/asked/yield", body: fmt.Sprintf(`{"reason":%q}`, str("r", 1025)), field: "reason"},
		{limit: "owner length", method: "POST", path: "/v1/locks/asked/yield", body: fmt.Sprintf(`{"owner":%q}`, str("o", 129)), field: "owner"},
		{limit: "token", method: "POST", path: "/v1/locks/asked/yield", body: `{"token":0}`, field: "token"},
		{limit: "duration", method: "POST", path: "/v1/locks/d1", body: `{"ttl":"1m30.5s","wait":"0","lock_delay":"500ms"}`, field: "ttl", inside: true},
		{limit: "duration", method: "POST", path: "/v1/locks/d2", body: `{"ttl":"30"}`, field: "ttl"},
		{limit: "duration", method: "POST", path: "/v1/locks/d3", body: `{"wait":"soon"}`, field: "wait"},
		{limit: "duration", method: "POST", path: "/v1/locks/d4", body: `{"lock_delay":"1d"}`, field: "lock_delay"},
		{limit: "duration", method: "POST", path: "/v1/sessions", body: `{"ttl":""}`, field: "ttl"},
	}
}

// closedBodyCases: every request body refuses a member it does not
// define, whatever the operation (the decoder refuses it first).
func closedBodyCases(t *testing.T) []limitCase {
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody *struct{} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	var cs []limitCase
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if op.RequestBody == nil {
				continue
			}
			p := strings.NewReplacer("{name}", "closed", "{resource}", "closed").Replace(path)
			cs = append(cs, limitCase{limit: "closed body", method: strings.ToUpper(method), path: p, body: `{"colour":"red"}`, field: "colour"})
		}
	}
	if len(cs) < 12 {
		t.Fatalf("%d operations with a request body, want every one of them", len(cs))
	}
	return cs
}
