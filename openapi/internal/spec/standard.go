package spec

import (
	"fmt"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
)

// The answers every API route may give by what its row in api.Routes
// says of it, which its handler's annotations leave out: a route that
// checks its query answers 400; one that needs a credential 401, and 403
// past the read role or on a name (a weaker role, a rule of the
// credential's that does not give the role on the name, or a browser's
// cross-origin request), 421 (the Host check) and 429 (the rate limit); one that needs
// a leader 503. 429 and 503 carry Retry-After, on every route. A handler
// annotates such a status itself only to say more of it (too_many_waiters,
// a session of another credential), and its text is kept.
const (
	descInvalid      = "invalid_request"
	descUnauthorized = "unauthorized: no valid bearer token (when auth is on)"
	descForbidden    = "forbidden: needs the %s role (on the name, for a credential with rules by prefix: the answer gives `role` and the credential's `prefixes`); or cross_origin: a browser sent it for a page of another origin"
	descHost         = "host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
	descRateLimited  = "rate_limited"
	descUnavailable  = "unavailable"
	descRetryAfter   = "Seconds to wait before retrying"
)

// standard adds those answers to the operation of each of api's routes.
func standard(doc *openapi3.T) error {
	problem := doc.Components.Schemas["Problem"]
	if problem == nil {
		return fmt.Errorf("schema Problem not found")
	}
	var routes *api.API // Routes reads no field: its rows name the handlers only
	for _, r := range routes.Routes() {
		path := api.DocPath(r.Path)
		item := doc.Paths.Value(path)
		var op *openapi3.Operation
		if item != nil {
			op = item.GetOperation(r.Method)
		}
		if op == nil {
			return fmt.Errorf("route %s %s has no annotated operation", r.Method, r.Path)
		}
		add := func(status int, desc string) {
			if op.Responses.Status(status) != nil {
				return
			}
			op.Responses.Set(fmt.Sprint(status), &openapi3.ResponseRef{Value: &openapi3.Response{
				Description: &desc,
				Content:     openapi3.Content{mimeProblem: &openapi3.MediaType{Schema: openapi3.NewSchemaRef("#/components/schemas/Problem", problem.Value)}},
			}})
		}
		if !r.Open {
			if !r.AnyQuery {
				add(http.StatusBadRequest, descInvalid)
			}
			add(http.StatusUnauthorized, descUnauthorized)
			if r.Role > auth.Read || r.Name != "" {
				add(http.StatusForbidden, fmt.Sprintf(descForbidden, r.Role))
			}
			add(http.StatusMisdirectedRequest, descHost)
			add(http.StatusTooManyRequests, descRateLimited)
		}
		if r.Leader {
			add(http.StatusServiceUnavailable, descUnavailable)
		}
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			if resp := op.Responses.Status(status); resp != nil && resp.Value != nil && resp.Value.Headers["Retry-After"] == nil {
				if resp.Value.Headers == nil {
					resp.Value.Headers = openapi3.Headers{}
				}
				resp.Value.Headers["Retry-After"] = &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
					Description: descRetryAfter, Schema: openapi3.NewSchemaRef("", openapi3.NewIntegerSchema()),
				}}}
			}
		}
	}
	return nil
}
