// Package contract checks HTTP traffic against baton's OpenAPI document,
// for tests. Wrap puts a validator (kin-openapi's openapi3filter) in front
// of a handler: every response must be documented for its operation, with
// the documented content type and a body matching its schema, no extra
// members allowed; and a request the document calls invalid must be
// answered 4xx. Any mismatch fails the test.
//
//	h := contract.Wrap(t, srv.Handler())
//	ts := httptest.NewServer(h)
package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/baton-dev/baton/openapi"
)

// Undocumented paths served for people, not for API clients (and the
// dashboard's and docs' assets under /ui/ and /docs/).
var undocumented = []string{"/", "/docs", "/docs/", "/openapi.json", "/openapi.yaml"}

var (
	once   sync.Once
	router routers.Router
	docErr error
)

func init() {
	openapi3filter.RegisterBodyDecoder("application/problem+json", openapi3filter.JSONBodyDecoder)
	// An event stream is text; its framing is checked by the stream's own
	// tests, the document only says it is a string.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
}

var (
	publishedOnce   sync.Once
	publishedRouter routers.Router
	publishedErr    error
)

// Request checks a request with body against the published document, as a
// client or a proxy that validates by it would: nil when the document
// takes it, else kin-openapi's error (an *openapi3filter.RequestError).
// Unlike Wrap's check, it reads the request as it is sent, with no
// allowance for what the server reads more liberally.
func Request(req *http.Request, body []byte) error {
	publishedOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON)
		if err == nil {
			err = Compilable(doc)
		}
		if err == nil {
			publishedRouter, err = legacy.NewRouter(doc)
		}
		publishedErr = err
	})
	if publishedErr != nil {
		return fmt.Errorf("load OpenAPI document: %w", publishedErr)
	}
	req = req.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := publishedRouter.FindRoute(req)
	if err != nil {
		return fmt.Errorf("no documented operation: %w", err)
	}
	decodeParams(params)
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// strictRouter loads the document once (see load).
func strictRouter() (routers.Router, error) {
	once.Do(func() { router, docErr = load(openapi.JSON) })
	return router, docErr
}

// load reads a document and routes by it, with every object schema of the
// components closed (additionalProperties: false): the published document
// leaves them open so clients tolerate fields added later, but our server
// must send exactly what it documents. It fails on a document with a
// schema that a validator cannot compile: kin-openapi's own check
// (legacy.NewRouter validates the document, patterns included), and
// Compilable's, for what kin-openapi accepts and other tools do not.
// A schema that no validator compiles is one they skip, or refuse.
func load(data []byte) (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, err
	}
	if err := Compilable(doc); err != nil {
		return nil, err
	}
	closed := false
	for _, s := range doc.Components.Schemas {
		if s.Value != nil && s.Value.Type.Is("object") && len(s.Value.Properties) > 0 && s.Value.AdditionalProperties.Schema == nil && s.Value.AdditionalProperties.Has == nil {
			s.Value.AdditionalProperties = openapi3.AdditionalProperties{Has: &closed}
		}
	}
	return legacy.NewRouter(doc)
}

// Compilable returns an error naming every schema of doc that JSON Schema
// validators built on ajv (Prism, Spectral, Redocly) refuse to compile
// though kin-openapi takes it: a nullable without a type, which OpenAPI
// 3.0 gives no meaning. Those tools then skip every schema that reaches
// it, so a document with one is checked by nobody but us.
func Compilable(doc *openapi3.T) error {
	var bad []string
	seen := map[*openapi3.Schema]bool{}
	var walk func(at string, ref *openapi3.SchemaRef)
	walk = func(at string, ref *openapi3.SchemaRef) {
		// A reference to a component is walked where it is defined, so
		// that a fault is named there.
		if ref == nil || ref.Value == nil || seen[ref.Value] || strings.HasPrefix(ref.Ref, "#/components/schemas/") {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Nullable && (s.Type == nil || len(*s.Type) == 0) {
			bad = append(bad, at)
		}
		for name, p := range s.Properties {
			walk(at+"/properties/"+name, p)
		}
		walk(at+"/items", s.Items)
		walk(at+"/additionalProperties", s.AdditionalProperties.Schema)
		walk(at+"/not", s.Not)
		for kw, refs := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
			for i, r := range refs {
				walk(fmt.Sprintf("%s/%s/%d", at, kw, i), r)
			}
		}
	}
	if doc.Components != nil {
		for name, s := range doc.Components.Schemas {
			walk("#/components/schemas/"+name, openapi3.NewSchemaRef("", s.Value))
		}
	}
	if doc.Paths != nil {
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				at := method + " " + path
				for _, p := range append(item.Parameters, op.Parameters...) {
					if p.Value != nil {
						walk(at+" parameter "+p.Value.Name, p.Value.Schema)
					}
				}
				if op.RequestBody != nil && op.RequestBody.Value != nil {
					for mt, m := range op.RequestBody.Value.Content {
						walk(at+" request "+mt, m.Schema)
					}
				}
				for code, r := range op.Responses.Map() {
					if r.Value == nil {
						continue
					}
					for mt, m := range r.Value.Content {
						walk(at+" "+code+" "+mt, m.Schema)
					}
					for name, h := range r.Value.Headers {
						if h.Value != nil {
							walk(at+" "+code+" header "+name, h.Value.Schema)
						}
					}
				}
			}
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("nullable without a type, which ajv-based tools cannot compile: %s", strings.Join(bad, ", "))
	}
	return nil
}

// Wrap returns h behind the contract check.
func Wrap(t testing.TB, h http.Handler) http.Handler {
	r, err := strictRouter()
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body []byte
		if req.Body != nil { // nil for requests built in process
			body, _ = io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, req)
		if req.Context().Err() != nil {
			return // the client left: nobody receives this answer
		}
		if err := check(r, req, body, rec); err != nil {
			t.Errorf("contract: %s %s → %d: %v", req.Method, req.URL, rec.status, err)
		}
	})
}

func check(r routers.Router, req *http.Request, body []byte, rec *recorder) error {
	for _, p := range undocumented {
		if req.URL.Path == p || strings.HasPrefix(req.URL.Path, "/docs/") || strings.HasPrefix(req.URL.Path, "/ui/") {
			return nil
		}
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	asServerReadsIt(vreq, body)
	route, params, err := r.FindRoute(vreq)
	decodeParams(params)
	if err != nil {
		// No documented operation: only a 404 or 405 may answer it.
		if rec.status == http.StatusNotFound || rec.status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("undocumented operation answered %d: %v", rec.status, err)
	}
	// kin-openapi's router ignores a trailing slash (/v1/locks/ finds GET
	// /v1/locks) and lets a path parameter be empty; the server routes
	// neither, and answers 404 or 405 as for any unknown path. That is no
	// undocumented answer of an operation.
	if strings.HasSuffix(req.URL.Path, "/") && (rec.status == http.StatusNotFound || rec.status == http.StatusMethodNotAllowed) {
		return nil
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && rec.status < 400 {
		return fmt.Errorf("the document calls this request invalid, yet it succeeded: %v", err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 rec.status,
		Header:                 rec.Header(),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(rec.body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("response does not match the document: %v", err)
	}
	return nil
}

// decodeParams percent-decodes path parameters. kin-openapi's router
// hands them over as the client escaped them; a parameter's value, which
// its schema describes, is what they decode to (as api.pathParam reads
// it: "a%3Ab" is a:b).
func decodeParams(params map[string]string) {
	for k, v := range params {
		if d, err := url.PathUnescape(v); err == nil {
			params[k] = d
		}
	}
}

// recorder passes a response through while keeping a copy.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Flush keeps streaming responses streaming.
func (r *recorder) Flush() {
	// Through ResponseController: the writer below may itself be a
	// wrapper that only offers Unwrap.
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the real writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// asServerReadsIt makes the copy of a request that is validated say what
// the server reads in it, where the server is knowingly more liberal than
// the document, and kin-openapi would call the request invalid:
//   - a query parameter with an empty value is absent (docs/API.md, Locks,
//     writes `?prefix=&limit=100&cursor=`); the document cannot say so;
//   - a body of white space only is no body (api.decodeBody); sent as
//     anything but application/json it is refused all the same, with a
//     415 the document lists;
//   - a key's "/"s in /v1/kv/{key} may come unescaped (docs/API.md, Keys):
//     the key is one parameter all the same, which the document can say
//     only of "%2F"s.
func asServerReadsIt(req *http.Request, body []byte) {
	if key, ok := strings.CutPrefix(req.URL.Path, "/v1/kv/"); ok && strings.Contains(key, "/") {
		req.URL.RawPath = "/v1/kv/" + url.PathEscape(key)
	}
	if q := req.URL.Query(); len(q) > 0 {
		for k, vs := range q {
			if strings.Join(vs, "") == "" {
				q.Del(k)
			}
		}
		req.URL.RawQuery = q.Encode()
	}
	if len(bytes.TrimSpace(body)) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
		req.Header.Del("Content-Type")
	}
}
