// Package scope fits the API's views to a credential's rules by prefix
// (package auth): the lists, narrowed to the ranges of names the
// credential may read before a page is cut, and the filter of the views
// that cannot be narrowed so (history pages, event streams).
//
// Authentication leaves the request's credential in the echo context
// (Key); without one (authentication off) every name is allowed.
package scope

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// Key is the echo context key under which authentication leaves the
// request's credential (*auth.Credential, shared: never changed).
const Key = "baton.access"

// Of is c's credential, nil without authentication.
func Of(c echo.Context) *auth.Credential {
	cred, _ := c.Get(Key).(*auth.Credential)
	return cred
}

// Check is nil when c's credential may act on every one of names with
// need: its rules' longest prefix of each name gives need. Otherwise it is
// the *auth.ScopeError, a 403 that names the rule or the credential's
// prefixes. Names are those of every kind (locks, elections, semaphores,
// read/write locks, fenced resources, keys) and sessions' owners.
func Check(c echo.Context, need auth.Role, names ...string) error {
	cred := Of(c)
	if cred == nil {
		return nil
	}
	for _, name := range names {
		if err := cred.Rules.Check(name, need); err != nil {
			return err
		}
	}
	return nil
}

// Name checks the name the path parameter param gives before next runs.
// A credential whose rule on the name is admin may act on other
// credentials' holds of it (lock.Caller.Admin), as an admin on every name
// may on any.
func Name(param string, need auth.Role, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		cred := Of(c)
		if cred == nil {
			return next(c)
		}
		name := request.PathParam(c, param)
		r, ok := cred.Rules.Decide(name)
		if !ok || !r.Role.Allows(need) {
			return cred.Rules.Check(name, need)
		}
		req := c.Request()
		if caller, ok := lock.CallerFrom(req.Context()); ok && !caller.Admin && r.Role == auth.Admin {
			caller.Admin = true
			c.SetRequest(req.WithContext(lock.WithCaller(req.Context(), caller)))
		}
		return next(c)
	}
}

// DefaultLimit is the page size of a list that asks for none, as the
// engine's.
const DefaultLimit = 100

// PageFunc reads one page of a list: entries under prefix, after after
// (exclusive), at most limit. It returns how many it added, the name (or
// cursor) of the last one, and the next page's cursor, "" when the range
// holds no more.
type PageFunc func(prefix, after string, limit int) (n int, last, next string, err error)

// Page fills one page of a list of names under prefix, after after, of at
// most limit entries, with only what cred may read. It narrows the list
// to ranges before it reads: each readable prefix under prefix is one
// range, read in name order with page until limit entries are in. So a
// page is never short for lack of permission while entries remain, and
// it costs what the page holds plus one read per readable prefix it
// spans.
//
// It returns the cursor of the next page, "" at the end.
func Page(c echo.Context, prefix, after string, limit int, page PageFunc) (string, error) {
	cred := Of(c)
	if limit == 0 {
		limit = DefaultLimit
	}
	if cred == nil {
		_, _, next, err := page(prefix, after, limit)
		return next, err
	}
	prefixes, all := cred.Rules.Readable()
	if all {
		_, _, next, err := page(prefix, after, limit)
		return next, err
	}
	var ranges []string
	for _, p := range prefixes {
		switch {
		case strings.HasPrefix(prefix, p):
			// The whole of prefix is readable.
			_, _, next, err := page(prefix, after, limit)
			return next, err
		case strings.HasPrefix(p, prefix):
			ranges = append(ranges, p)
		}
	}
	for i, p := range ranges {
		from := ""
		switch {
		case after == "" || after < p:
		case strings.HasPrefix(after, p):
			from = after
		default:
			continue // every name under p sorts before after
		}
		n, last, next, err := page(p, from, limit)
		if err != nil || next != "" {
			return next, err
		}
		if limit -= n; limit == 0 {
			if i == len(ranges)-1 {
				return "", nil
			}
			return last, nil
		}
	}
	return "", nil
}

// List is Page over one of the engine's lists of things by name: it
// returns the page's things and the next page's cursor.
func List[T any](c echo.Context, o lock.ListOptions, list func(lock.ListOptions) ([]T, string, error), name func(T) string) ([]T, string, error) {
	var out []T
	next, err := Page(c, o.Prefix, o.After, o.Limit, func(prefix, after string, limit int) (int, string, string, error) {
		page, next, err := list(lock.ListOptions{Prefix: prefix, After: after, Limit: limit})
		if err != nil {
			return 0, "", "", err
		}
		out = append(out, page...)
		last := ""
		if len(page) > 0 {
			last = name(page[len(page)-1])
		}
		return len(page), last, next, nil
	})
	return out, next, err
}

// Redact is names without those c's credential may not read: the other
// members of a lock set, a session's holds. A view shows a thing the
// credential may read, but what that thing names beside itself may be
// another team's. It returns names itself when all may be read.
func Redact(c echo.Context, names []string) []string {
	if len(names) == 0 {
		return names
	}
	cred := Of(c)
	if cred == nil {
		return names
	}
	if _, all := cred.Rules.Readable(); all {
		return names
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if cred.Rules.Allows(n, auth.Read) {
			out = append(out, n)
		}
	}
	return out
}

// View fits a view of the trail (a history page, an event stream) to c's
// credential: a view of one thing (lockName, or name) it may not read is
// a 403; any other view keeps only the names it may read (Filter).
func View(c echo.Context, lockName, name string) (trail.Scope, error) {
	switch {
	case lockName != "":
		return nil, Check(c, auth.Read, lockName)
	case name != "":
		return nil, Check(c, auth.Read, name)
	}
	return Filter(c), nil
}

// Filter is the scope of the views that cannot be narrowed to ranges
// (history pages, event streams): the prefixes c's credential may read,
// nil when it may read everything. Every role allows read, so what it may
// read is the union of its rules' prefixes.
func Filter(c echo.Context) trail.Scope {
	cred := Of(c)
	if cred == nil {
		return nil
	}
	prefixes, all := cred.Rules.Readable()
	if all {
		return nil
	}
	return append(trail.Scope{}, prefixes...)
}
