package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/problem"
)

// MaxBodyBytes caps request bodies; larger ones get 413.
const MaxBodyBytes = 64 << 10

// decodeBody reads a JSON body into v, strictly: unknown fields, trailing
// data and wrong types are 400s naming the field. An empty body decodes
// as {} when optional is set (every field of the request is optional).
func decodeBody(c echo.Context, v any, optional bool) error {
	r := c.Request()
	// Read into a pooled buffer: nothing decoded keeps a reference to it
	// (encoding/json copies strings and RawMessages out).
	bp := bufPool.Get().(*[]byte)
	defer putBuf(bp)
	body, err := readAll(http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes), (*bp)[:0])
	*bp = body
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return newProblem(problem.BodyTooLarge, fmt.Sprintf("request bodies are limited to %d bytes", MaxBodyBytes))
		}
		return badRequest("body", "could not read the request body")
	}
	// Any byte is a body, white space too: an optional body of blanks
	// sent as text/plain must not pass for none (see CheckMediaType).
	if len(body) > 0 {
		if err := CheckMediaType(r.Header); err != nil {
			return err
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return badRequest("body", "a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if p := mapValueProblem(err, body); p != nil {
			return p
		}
		return jsonProblem(err)
	}
	// Whatever follows the object must be white space: dec.More() is
	// false before a stray '}' or ']', so it cannot tell `{"owner":"w"}}`
	// from a body that ends.
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return badRequest("body", "unexpected data after the JSON object")
	}
	return exactNames(body, v)
}

// readAll is io.ReadAll appending to b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
}

// exactNames refuses a member whose name matches a field only without
// regard to case. Member names are case-sensitive (docs/API.md, Errors;
// the OpenAPI document), and encoding/json matches them to fields
// case-insensitively, so without this {"vAlue":1} or {"TTL":"1h"} would
// pass as value and ttl.
func exactNames(body []byte, v any) error {
	if plainLower(body) {
		// Every request member name is lower-case ASCII; a name that
		// folds to one of them but differs needs an upper-case letter, a
		// non-ASCII rune (ſ, K) or an escape. Most bodies have none, and
		// need no second parse.
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil // not an object (null): nothing to check
	}
	names := jsonNames(reflect.TypeOf(v))
	for name := range members {
		if names[name] {
			continue
		}
		for known := range names {
			if strings.EqualFold(name, known) {
				return badRequest(name, fmt.Sprintf("unknown field %q; field names are case-sensitive: %q", name, known))
			}
		}
	}
	return nil
}

// plainLower reports whether b holds no upper-case ASCII letter, no byte
// beyond ASCII and no backslash.
func plainLower(b []byte) bool {
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

var jsonNamesCache sync.Map // reflect.Type -> map[string]bool

// jsonNames returns the member names of the struct t points to.
func jsonNames(t reflect.Type) map[string]bool {
	if m, ok := jsonNamesCache.Load(t); ok {
		return m.(map[string]bool)
	}
	names := map[string]bool{}
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		for f := range t.Elem().Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names[name] = true
		}
	}
	jsonNamesCache.Store(t, names)
	return names
}

// CheckMediaType returns an ErrUnsupportedMediaType error unless h says
// Content-Type: application/json (parameters such as charset aside), once.
// It is the rule for every request body: a browser sends text/plain, form
// and multipart bodies, or none of the type at all, to any site without a
// CORS preflight, and a JSON one only to a site that allows it, which
// baton never does. So a body of any other type, even one that holds
// JSON (curl -d sends it as a form), is refused before anything is done.
func CheckMediaType(h http.Header) error {
	cts := h.Values(echo.HeaderContentType)
	switch {
	case len(cts) == 0:
		return fmt.Errorf("%w: the request has a body and no Content-Type; send it as JSON with Content-Type: application/json (curl: -H 'Content-Type: application/json')", ErrUnsupportedMediaType)
	case len(cts) > 1:
		return fmt.Errorf("%w: the request has more than one Content-Type; send one, application/json", ErrUnsupportedMediaType)
	}
	if !isJSON(cts[0]) {
		return fmt.Errorf("%w: the body is sent as %.64q; send it as JSON with Content-Type: application/json (curl: -H 'Content-Type: application/json')", ErrUnsupportedMediaType, cts[0])
	}
	return nil
}

// isJSON reports whether the Content-Type value ct is application/json.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return (err == nil || errors.Is(err, mime.ErrInvalidMediaParameter)) && mt == "application/json"
}

// mapValueProblem names the member at fault when a value inside an
// object of strings (metadata) has another type: encoding/json names only
// the object, and says the object "must be a string", which it need not.
// It returns nil for any other error.
func mapValueProblem(err error, body []byte) *Problem {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" || strings.Contains(te.Field, ".") || te.Type.Kind() != reflect.String {
		return nil
	}
	var top map[string]json.RawMessage
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(top[te.Field], &obj) != nil {
		return nil // the member itself is no object: jsonProblem says so
	}
	keys := make([]string, 0, len(obj))
	for k, raw := range obj {
		if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '"' {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	field := te.Field + "." + keys[0]
	return badRequest(field, fmt.Sprintf("%s: values of %s must be strings, not a JSON %s", field, te.Field, te.Value))
}

func jsonProblem(err error) *Problem {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest("body", fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error()))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return badRequest("body", "the body must be a JSON object")
		}
		return badRequest(field, fmt.Sprintf("%s must be %s, not a JSON %s", field, jsonKind(te.Type.Kind().String()), te.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "the JSON body ends too early")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// encoding/json quotes the name with %q: unquoted, the problem
		// names the member as the body spells it (`a"b`, not `a\"b`).
		if s, err := strconv.Unquote(name); err == nil {
			name = s
		}
		// A 400 always names a field, and field is omitted when empty: a
		// member named "" is the body's fault.
		if name == "" {
			return badRequest("body", "the body has a member with an empty name, which is no field of this request")
		}
		return badRequest(name, fmt.Sprintf("unknown field %q", name))
	}
	return badRequest("body", "invalid JSON body")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int64", "int", "uint64":
		return "an integer"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a " + k
}

// parseDuration reads an optional Go duration string field.
func parseDuration(field string, s *string) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, badRequest(field, fmt.Sprintf("%s must be a duration such as \"30s\" or \"2m\", got %q", field, *s))
	}
	if d < 0 {
		return 0, badRequest(field, fmt.Sprintf("%s must not be negative", field))
	}
	return d, nil
}

// checkQueryString checks a raw query string against the names a route
// allows, so that a typo is an error rather than silently ignored. Every
// pair must parse (echo's QueryParams drops those that do not, such as
// `?limit=%G0` or `?token=5;x=1`), every name must be one of allowed and
// appear once, and the 400 always names a field: "query" when the fault
// is no single parameter's.
func checkQueryString(raw string, allowed []string) error {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return badRequest("query", fmt.Sprintf("the query string does not parse: %v", err))
	}
	for k, vs := range q {
		if k == "" {
			return badRequest("query", "the query string has a parameter with an empty name")
		}
		if !slices.Contains(allowed, k) {
			return badRequest(k, fmt.Sprintf("unknown query parameter %q", k))
		}
		if len(vs) > 1 {
			return badRequest(k, fmt.Sprintf("query parameter %q given more than once", k))
		}
	}
	return nil
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(q url.Values, name string, lo, hi int64) (int64, bool, error) {
	s := q.Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false, badRequest(name, fmt.Sprintf("%s must be an integer between %d and %d", name, lo, hi))
	}
	return n, true, nil
}

// listQuery reads a listing's query: prefix, limit (0 when absent) and
// cursor.
func listQuery(c echo.Context) (url.Values, int, error) {
	q := queryOf(c)
	limit, _, err := intParam(q, "limit", 1, lock.MaxListLimit)
	return q, int(limit), err
}

// timeParam reads an optional RFC 3339 time query parameter.
func timeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badRequest(name, fmt.Sprintf("%s must be an RFC 3339 time such as 2026-11-29T14:00:00Z", name))
	}
	return t, nil
}

// encodeCursor turns the last lock name of a page into the opaque cursor
// of the next one.
func encodeCursor(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// decodeCursor reads a cursor made by encodeCursor; anything else is a 400.
func decodeCursor(cur string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil || !lock.ValidName(string(b)) {
		return "", badRequest("cursor", "cursor is not one returned by a previous page")
	}
	return string(b), nil
}

// pathParam returns the path parameter name, percent-decoded, however the
// client escaped it. echo routes on the escaped path whenever a client
// escaped it differently from Go's default (URL.RawPath is set then), and
// hands the parameters over still escaped: the dashboard's
// encodeURIComponent sends the ':' that lock names may hold as %3A, and
// "a%3Ab" must reach the engine as "a:b". An escape that does not decode
// is left as it is, and the name's validation refuses it.
func pathParam(c echo.Context, name string) string {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v // echo matched the decoded path: v is decoded already
	}
	if s, err := url.PathUnescape(v); err == nil {
		return s
	}
	return v
}
