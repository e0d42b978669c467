// Package request reads what a request to the API brings: its JSON body,
// strictly, its query string and its path parameters. Every fault is an
// *Error that names the field at fault and the problem code to answer
// with; package api renders it as problem+json. It knows nothing of the
// engine: the handlers above it do.
package request

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

	"github.com/baton-dev/baton/api/internal/jsonw"
	"github.com/baton-dev/baton/problem"
)

// MaxBodyBytes caps request bodies; larger ones get 413. A route may
// take more (BodyUpTo): a key's put brings a value besides.
const MaxBodyBytes = 64 << 10

// Body reads a JSON body into v, strictly: unknown fields, trailing
// data and wrong types are 400s naming the field. An empty body decodes
// as {} when optional is set (every field of the request is optional).
func Body(c echo.Context, v any, optional bool) error {
	return BodyUpTo(c, v, optional, MaxBodyBytes)
}

// BodyUpTo is Body of a body of up to limit bytes.
func BodyUpTo(c echo.Context, v any, optional bool, limit int) error {
	r := c.Request()
	// Read into a pooled buffer: nothing decoded keeps a reference to it
	// (encoding/json copies strings and RawMessages out).
	bp := jsonw.GetBuf()
	defer jsonw.PutBuf(bp)
	body, err := readAll(http.MaxBytesReader(c.Response(), r.Body, int64(limit)), (*bp)[:0])
	*bp = body
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &Error{Code: problem.BodyTooLarge, Detail: fmt.Sprintf("request bodies are limited to %d bytes", limit)}
		}
		return Invalid("body", "could not read the request body")
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
		return Invalid("body", "a JSON object is required")
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
		return Invalid("body", "unexpected data after the JSON object")
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
				return Invalid(name, fmt.Sprintf("unknown field %q; field names are case-sensitive: %q", name, known))
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
		addNames(names, t.Elem())
	}
	jsonNamesCache.Store(t, names)
	return names
}

// addNames adds the member names of struct type t to names: an embedded
// struct's members are its own, as encoding/json reads them.
func addNames(names map[string]bool, t reflect.Type) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			addNames(names, f.Type)
		case name == "-" || !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
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
func mapValueProblem(err error, body []byte) *Error {
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
	return Invalid(field, fmt.Sprintf("%s: values of %s must be strings, not a JSON %s", field, te.Field, te.Value))
}

func jsonProblem(err error) *Error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return Invalid("body", fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error()))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return Invalid("body", "the body must be a JSON object")
		}
		return Invalid(field, fmt.Sprintf("%s must be %s, not a JSON %s", field, jsonKind(te.Type.Kind().String()), te.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("body", "the JSON body ends too early")
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
			return Invalid("body", "the body has a member with an empty name, which is no field of this request")
		}
		return Invalid(name, fmt.Sprintf("unknown field %q", name))
	}
	return Invalid("body", "invalid JSON body")
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

// Duration reads an optional Go duration string field.
func Duration(field string, s *string) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, Invalid(field, fmt.Sprintf("%s must be a duration such as \"30s\" or \"2m\", got %q", field, *s))
	}
	if d < 0 {
		return 0, Invalid(field, fmt.Sprintf("%s must not be negative", field))
	}
	return d, nil
}

// CheckQuery checks a raw query string against the names a route
// allows, so that a typo is an error rather than silently ignored. Every
// pair must parse (echo's QueryParams drops those that do not, such as
// `?limit=%G0` or `?token=5;x=1`), every name must be one of allowed and
// appear once, and the 400 always names a field: "query" when the fault
// is no single parameter's.
func CheckQuery(raw string, allowed []string) error {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return Invalid("query", fmt.Sprintf("the query string does not parse: %v", err))
	}
	for k, vs := range q {
		if k == "" {
			return Invalid("query", "the query string has a parameter with an empty name")
		}
		if !slices.Contains(allowed, k) {
			return Invalid(k, fmt.Sprintf("unknown query parameter %q", k))
		}
		if len(vs) > 1 {
			return Invalid(k, fmt.Sprintf("query parameter %q given more than once", k))
		}
	}
	return nil
}

// Int reads an optional integer query parameter within [lo, hi].
func Int(q url.Values, name string, lo, hi int64) (int64, bool, error) {
	s := q.Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false, Invalid(name, fmt.Sprintf("%s must be an integer between %d and %d", name, lo, hi))
	}
	return n, true, nil
}

// List reads a listing's query: prefix, limit (0 when absent, at most
// max) and cursor.
func List(c echo.Context, max int) (url.Values, int, error) {
	q := Query(c)
	limit, _, err := Int(q, "limit", 1, int64(max))
	return q, int(limit), err
}

// Time reads an optional RFC 3339 time query parameter.
func Time(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Invalid(name, fmt.Sprintf("%s must be an RFC 3339 time such as 2026-11-29T14:00:00Z", name))
	}
	return t, nil
}

// EncodeCursor turns the last name of a page into the opaque cursor of
// the next one.
func EncodeCursor(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// DecodeCursor reads a cursor made by EncodeCursor of a name that valid
// accepts; anything else is a 400.
func DecodeCursor(cur string, valid func(string) bool) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil || !valid(string(b)) {
		return "", Invalid("cursor", "cursor is not one returned by a previous page")
	}
	return string(b), nil
}

// PathParam returns the path parameter name, percent-decoded, however the
// client escaped it. echo routes on the escaped path whenever a client
// escaped it differently from Go's default (URL.RawPath is set then), and
// hands the parameters over still escaped: the dashboard's
// encodeURIComponent sends the ':' that lock names may hold as %3A, and
// "a%3Ab" must reach the engine as "a:b". An escape that does not decode
// is left as it is, and the name's validation refuses it.
func PathParam(c echo.Context, name string) string {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v // echo matched the decoded path: v is decoded already
	}
	if s, err := url.PathUnescape(v); err == nil {
		return s
	}
	return v
}

// Error is a request the API cannot take as sent: the problem code to
// answer with (invalid_request, body_too_large, unsupported_media_type)
// and the request field at fault.
type Error struct {
	Code   problem.Code
	Field  string
	Detail string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Detail }

// Invalid is an invalid_request naming field.
func Invalid(field, detail string) *Error {
	return &Error{Code: problem.InvalidRequest, Field: field, Detail: detail}
}

// ErrUnsupportedMediaType means a request that changes state carries a
// body without saying Content-Type: application/json. A web page can make
// a browser send a text/plain or form body to any site without asking
// first, never a JSON one; so the rule keeps pages of other sites from
// writing, whatever the body holds.
var ErrUnsupportedMediaType = errors.New("unsupported media type")

// Query is the request's query, which the route's check (CheckQuery) has
// passed: every pair parsed, each name allowed and given once. A request
// without a query gets nil, and no map is made for it.
func Query(c echo.Context) url.Values {
	if c.Request().URL.RawQuery == "" {
		return nil
	}
	return c.QueryParams()
}
