package contract

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/baton-dev/baton/openapi"
)

// spyT records failures instead of failing, so the check itself can be
// tested. The handlers below are fakes on purpose: they stand for a server
// that breaks the contract.
type spyT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (s *spyT) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, format)
}

func (s *spyT) Fatalf(format string, args ...any) { s.TB.Fatalf(format, args...) }

const lockJSON = `{"name":"a","owner":"w","token":4,"ttl":"30s","acquired_at":"2026-11-29T14:25:13.886Z","expires_at":"2026-11-29T14:25:43.881Z","metadata":{}}`

func TestWrap_CatchesWhatBreaksTheContract(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		contentType, response    string
		wantFailure              bool
	}{
		{"documented success", "GET", "/v1/locks/a", "", 200, "application/json", lockJSON, false},
		{"documented problem", "GET", "/v1/locks/a", "", 404, "application/problem+json", `{"type":"t","title":"x","status":404,"code":"not_held"}`, false},
		{"problem without its code", "GET", "/v1/locks/a", "", 404, "application/problem+json", `{"type":"t","title":"x","status":404}`, true},
		{"problem with a member of the wrong type", "GET", "/v1/locks/a", "", 404, "application/problem+json", `{"type":"t","title":"x","status":"404","code":"not_held"}`, true},
		{"undocumented status", "GET", "/v1/locks/a", "", 418, "application/json", `{}`, true},
		{"extra member", "GET", "/v1/locks/a", "", 200, "application/json", strings.Replace(lockJSON, `"token":4`, `"token":4,"color":"red"`, 1), true},
		{"missing member", "GET", "/v1/locks/a", "", 200, "application/json", strings.Replace(lockJSON, `"token":4,`, ``, 1), true},
		{"wrong type", "GET", "/v1/locks/a", "", 200, "application/json", strings.Replace(lockJSON, `"token":4`, `"token":"4"`, 1), true},
		{"problem sent as plain JSON", "GET", "/v1/locks/a", "", 404, "application/json", `{"type":"t","title":"x","status":404,"code":"not_held"}`, true},
		{"invalid request that succeeded", "POST", "/v1/locks/a/renew", `{"token":"x"}`, 200, "application/json", lockJSON, true},
		{"invalid request rejected", "POST", "/v1/locks/a/renew", `{"token":"x"}`, 400, "application/problem+json", `{"type":"t","title":"x","status":400,"code":"invalid_request","field":"token"}`, false},
		{"undocumented route answered", "GET", "/v1/nope", "", 200, "application/json", `{}`, true},
		{"undocumented route not found", "GET", "/v1/nope", "", 404, "application/problem+json", `{"type":"t","title":"x","status":404,"code":"route_not_found"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spy := &spyT{TB: t}
			h := Wrap(spy, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.response))
			}))
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if failed := len(spy.errors) > 0; failed != tc.wantFailure {
				t.Fatalf("contract failure = %v, want %v (%v)", failed, tc.wantFailure, spy.errors)
			}
		})
	}
}

func TestLoad_RefusesSchemasAValidatorCannotCompile(t *testing.T) {
	if _, err := load(openapi.JSON); err != nil {
		t.Fatalf("the published document: %v", err)
	}
	for _, tc := range []struct {
		name   string
		schema map[string]any // replaces Leader's value
		want   string
	}{
		// kin-openapi takes it; ajv (Prism, Spectral, Redocly) does not.
		{"nullable without a type", map[string]any{"nullable": true}, "components/schemas/Leader/properties/value"},
		{"nullable without a type, nested", map[string]any{"type": "array", "items": map[string]any{"nullable": true}}, "components/schemas/Leader/properties/value/items"},
		// Neither compiles it.
		{"pattern that is no regular expression", map[string]any{"type": "string", "pattern": "(["}, "regexp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
				t.Fatal(err)
			}
			leader := doc["components"].(map[string]any)["schemas"].(map[string]any)["Leader"].(map[string]any)
			leader["properties"].(map[string]any)["value"] = tc.schema
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = load(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
