package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-dev/baton/client"
)

// This file holds how the commands show the things with seats: a
// semaphore's permits and a read/write lock's holds are both the API's
// Hold, shown, listed and revoked by token alike. semaphore.go and
// rwlock.go each have a seatKind, which says what differs and turns their
// kind into a seatThing.

// seatKind says how the commands name and show one kind of thing with
// seats, T as the client describes it (SemaphoreInfo, RWLockInfo).
type seatKind[T any] struct {
	flag   string // the commands' flag for the thing: semaphore, rwlock
	noun   string // what revoke ends: permit, hold
	column string // list's heading of the kind's column: HELD, MODE
	// modes: the kind's waiters wait for a mode, which they show.
	modes bool
	view  func(*T) seatThing
}

// seatThing is a semaphore or a read/write lock as the commands show it.
type seatThing struct {
	name  string
	extra map[string]any // -o json's members of the kind: limit, mode
	rows  [][2]string    // status's rows of the kind, after the name
	cell  string         // list's cell of the kind's column
	// holders are the seats held, oldest first.
	holders []seatHold
	waiters []client.Waiter
}

// seatHold is a permit or a read/write lock's hold as the commands show it.
type seatHold struct {
	name, owner, session string
	token                int64
	ttl                  time.Duration
	acquired, expires    time.Time
	metadata             map[string]string
	label                string         // status's row heading: permit, or the hold's mode
	extra                map[string]any // -o json's member of the kind: limit, mode
}

// show is "baton status --semaphore|--rwlock NAME", once read.
func (k *seatKind[T]) show(g *globals, t *T) error {
	s := k.view(t)
	if g.json() {
		return g.printJSON(k.json(&s))
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\n", s.name)
	for _, r := range s.rows {
		fmt.Fprintf(w, "%s\t%s\n", r[0], r[1])
	}
	for _, h := range s.holders {
		fmt.Fprintf(w, "%s %d\t%s (%s, expires in %s)\n", h.label, h.token, h.owner, h.sessionOrTTL(), time.Until(h.expires).Round(time.Second))
	}
	for _, wt := range s.waiters {
		who := wt.Owner
		if k.modes {
			who += ", " + wt.Mode
		}
		fmt.Fprintf(w, "waiter %d\t%s (since %s)\n", wt.Position, who, wt.Since.Local().Format(time.RFC3339))
	}
	return w.Flush()
}

func (h *seatHold) sessionOrTTL() string {
	if h.session != "" {
		return "session " + h.session
	}
	return "ttl " + h.ttl.String()
}

// views turns each of all into what the commands show.
func views[T, V any](all []T, view func(*T) V) []V {
	out := make([]V, len(all))
	for i := range all {
		out[i] = view(&all[i])
	}
	return out
}

// list is "baton list --semaphores|--rwlocks", reading page by page.
func (k *seatKind[T]) list(ctx context.Context, g *globals, prefix string, limit int, page func(context.Context, client.ListOptions) ([]T, string, error)) error {
	things, err := pages(ctx, prefix, limit, page)
	if err != nil {
		return err
	}
	all := views(things, k.view)
	if g.json() {
		out := make([]map[string]any, len(all))
		for i := range all {
			out[i] = k.json(&all[i])
		}
		return g.printJSON(out)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "NAME\t%s\tHOLDERS\n", k.column)
	for _, s := range all {
		hs := make([]string, len(s.holders))
		for i, h := range s.holders {
			hs[i] = fmt.Sprintf("%s (%d)", h.owner, h.token)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.name, s.cell, dash(strings.Join(hs, ", ")))
	}
	return w.Flush()
}

// revoke is "baton revoke --semaphore|--rwlock NAME --token N".
func (k *seatKind[T]) revoke(ctx context.Context, g *globals, name string, token int64, reason string, revoke func(ctx context.Context, name string, token int64, reason string) error) error {
	if token <= 0 {
		return usagef("revoke --%s: --token is required: the %s to revoke", k.flag, k.noun)
	}
	if err := revoke(ctx, name, token, reason); err != nil {
		return err
	}
	if !g.json() {
		fmt.Fprintf(g.stdout, "revoked %s %d of %s\n", k.noun, token, name)
	}
	return nil
}

// json is s with the API's member names.
func (k *seatKind[T]) json(s *seatThing) map[string]any {
	m := map[string]any{"name": s.name, "holders": holdsJSON(s.holders)}
	for key, v := range s.extra {
		m[key] = v
	}
	if len(s.waiters) > 0 {
		ws := make([]map[string]any, len(s.waiters))
		for i, w := range s.waiters {
			ws[i] = map[string]any{"owner": w.Owner, "position": w.Position, "since": apiTime(w.Since)}
			if k.modes {
				ws[i]["mode"] = w.Mode
			}
			if w.Session != "" {
				ws[i]["session"] = w.Session
			}
		}
		m["waiters"] = ws
	}
	return m
}

func holdsJSON(hs []seatHold) []map[string]any {
	out := make([]map[string]any, len(hs))
	for i := range hs {
		out[i] = hs[i].json()
	}
	return out
}

func (h *seatHold) json() map[string]any {
	md := h.metadata
	if md == nil {
		md = map[string]string{}
	}
	m := map[string]any{
		"name": h.name, "owner": h.owner, "token": h.token, "ttl": h.ttl.String(),
		"acquired_at": apiTime(h.acquired), "expires_at": apiTime(h.expires), "metadata": md,
	}
	for key, v := range h.extra {
		m[key] = v
	}
	if h.session != "" {
		m["session"] = h.session
	}
	return m
}
