package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// MaxBodyBytes caps request bodies; larger ones get 413.
const MaxBodyBytes = 64 << 10

// decodeBody reads a JSON body into v, strictly: unknown fields, trailing
// data and wrong types are 400s naming the field. An empty body decodes
// as {} when optional is set (every field of the request is optional).
func decodeBody(c echo.Context, v any, optional bool) error {
	r := c.Request()
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &Problem{
				Type: ProblemType("body_too_large"), Title: "Request body too large", Status: http.StatusRequestEntityTooLarge,
				Code: "body_too_large", Detail: fmt.Sprintf("request bodies are limited to %d bytes", MaxBodyBytes),
			}
		}
		return badRequest("body", "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return badRequest("body", "a JSON object is required")
	}
	if ct := r.Header.Get(echo.HeaderContentType); ct != "" && !isJSONish(ct) {
		return &Problem{
			Type: ProblemType("unsupported_media_type"), Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType,
			Code: "unsupported_media_type", Detail: "send the body as application/json",
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	// Fix (found by TestBadInput_…/trailing_brace): dec.More() is false
	// before a stray '}' or ']', so `{"owner":"w"}}` passed as valid.
	// Whatever follows the object must be white space.
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return badRequest("body", "unexpected data after the JSON object")
	}
	return nil
}

// isJSONish accepts JSON and, for curl users who forget -H, the form type
// curl -d sends by default; the body must still be JSON.
func isJSONish(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	return ct == "application/json" || strings.HasSuffix(ct, "+json") || ct == "application/x-www-form-urlencoded" || ct == "text/plain"
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
		name = strings.Trim(name, `"`)
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

// query checks that the request names only allowed query parameters, each
// at most once, so a typo is an error rather than silently ignored.
func query(c echo.Context, allowed ...string) (url.Values, error) {
	q := c.QueryParams()
	for k, vs := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return nil, badRequest(k, fmt.Sprintf("unknown query parameter %q", k))
		}
		if len(vs) > 1 {
			return nil, badRequest(k, fmt.Sprintf("query parameter %q given more than once", k))
		}
	}
	return q, nil
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
