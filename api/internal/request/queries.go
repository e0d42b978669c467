package request

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// ListOptions reads a listing's query: prefix, limit and cursor.
func ListOptions(c echo.Context) (lock.ListOptions, error) {
	return ListOf(c, lock.CheckNamePrefix, lock.ValidName)
}

// ListOf reads a listing's query, whose prefix checkPrefix accepts and
// whose cursor encodes what valid accepts (a name, a key, a session's
// owner and ID). The prefix is checked here, not only by the engine's
// list: a scoped credential's page may read no range at all.
func ListOf(c echo.Context, checkPrefix func(field, prefix string) error, valid func(string) bool) (lock.ListOptions, error) {
	q, limit, err := List(c, lock.MaxListLimit)
	if err != nil {
		return lock.ListOptions{}, err
	}
	o := lock.ListOptions{Prefix: q.Get("prefix"), Limit: limit}
	if err := checkPrefix("prefix", o.Prefix); err != nil {
		return lock.ListOptions{}, err
	}
	if cur := q.Get("cursor"); cur != "" {
		if o.After, err = DecodeCursor(cur, valid); err != nil {
			return lock.ListOptions{}, err
		}
	}
	return o, nil
}

// Token reads the token query parameter that DELETE path requires.
func Token(c echo.Context, path string) (int64, error) {
	tok, ok, err := Int(Query(c), "token", 1, math.MaxInt64)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, Invalid("token", "the token query parameter is required: DELETE "+path+"?token=4711")
	}
	return tok, nil
}

// LastEventID reads a stream's Last-Event-ID header, the revision it
// resumes after; ok is false without one.
func LastEventID(c echo.Context) (rev int64, ok bool, err error) {
	h := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID"))
	if h == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(h, 10, 64)
	if perr != nil || n < 0 {
		return 0, false, Invalid("Last-Event-ID", "the Last-Event-ID header must be a revision (an integer, 0 or more)")
	}
	return n, true, nil
}

// SubscribeOptions reads an event stream's filters and where it starts.
// since is exclusive: since=0 replays every retained event; without
// since (or Last-Event-ID, which wins) only live events come.
func SubscribeOptions(c echo.Context) (trail.SubscribeOptions, error) {
	q := Query(c)
	since, replay, err := Int(q, "since", 0, 1<<62)
	if err != nil {
		return trail.SubscribeOptions{}, err
	}
	if n, ok, err := LastEventID(c); err != nil {
		return trail.SubscribeOptions{}, err
	} else if ok {
		since, replay = n, true
	}
	return trail.SubscribeOptions{
		Replay: replay, Since: since, Lock: q.Get("lock"), Kind: lock.EventKind(q.Get("kind")), Name: q.Get("name"),
	}, nil
}

// TTL reads an optional ttl member. The engine reads a TTL of 0 as its
// default and checks every other against its MinTTL and MaxTTL; a ttl the
// request names as 0 is below MinTTL, and this says so with the engine's
// own bound, minTTL, whatever it is configured to.
func TTL(s *string, minTTL time.Duration) (time.Duration, error) {
	d, err := Duration("ttl", s)
	if err == nil && s != nil && d == 0 {
		err = Invalid("ttl", fmt.Sprintf("ttl must be at least %s", minTTL))
	}
	return d, err
}

// Terms are the members of every acquire's body that say how the hold
// lives and how long the acquire waits.
type Terms struct {
	TTL, Wait time.Duration
	Session   string
	KeepPlace bool
}

// ReadTerms reads an acquire's ttl, wait, session and keep_place; the
// engine checks them against its bounds (minTTL is its MinTTL).
func ReadTerms(ttl, wait, session *string, keepPlace *bool, minTTL time.Duration) (Terms, error) {
	var (
		t   Terms
		err error
	)
	if t.TTL, err = TTL(ttl, minTTL); err != nil {
		return t, err
	}
	if t.Wait, err = Duration("wait", wait); err != nil {
		return t, err
	}
	if session != nil {
		if *session == "" {
			return t, Invalid("session", "session must not be empty when given")
		}
		t.Session = *session
	}
	t.KeepPlace = keepPlace != nil && *keepPlace
	return t, nil
}
