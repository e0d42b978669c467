package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-dev/baton/client"
)

// This file holds the semaphore side of the commands: "baton exec
// --permits", "status --semaphore", "list --semaphores" and "revoke
// --semaphore", each beside its lock side in exec.go and cli.go; what it
// shares with read/write locks is in seats.go.

// runPermitExec is "baton exec --permits N": CMD runs holding one of the
// N permits of the semaphore name, under the same heldRun as a lock's.
func runPermitExec(ctx context.Context, g *globals, cl *client.Client, name string, limit int, argv []string, o client.PermitOptions, st stopping) error {
	r := startHeldRun(g, "baton exec", argv, st)
	defer r.stop()
	p, end, err := take(ctx, r, &sessionWait{cl, o.Wait, o.Owner, &o.Session, &o.TTL},
		func(ctx context.Context) (*client.Permit, error) { return cl.AcquirePermit(ctx, name, limit, o) },
		func(err error) error { return permitDetail(name, err) })
	if err != nil {
		return err
	}
	defer end()
	env := []string{
		"BATON_SEMAPHORE=" + name, "BATON_TOKEN=" + strconv.FormatInt(p.Token(), 10), "BATON_LIMIT=" + strconv.Itoa(p.Limit()),
	}
	return r.run(p, fmt.Sprintf("release permit %d of %s", p.Token(), name), p.Release, env)
}

// permitDetail says who holds the permits of a full semaphore, or under
// which limit they are held, in place of the wire error's text; the error
// still matches its sentinel for the exit code.
func permitDetail(name string, err error) error {
	var ce *client.Error
	switch {
	case !errors.As(err, &ce):
		return err
	case errors.Is(err, client.ErrSemaphoreFull) && len(ce.Holders) > 0:
		hs := make([]string, len(ce.Holders))
		for i, h := range ce.Holders {
			hs[i] = fmt.Sprintf("%q with token %d", h.Owner, h.Token)
		}
		return &friendly{msg: fmt.Sprintf("%s is full: its %d permits are held by %s", name, ce.Holders[0].Limit, strings.Join(hs, ", ")), err: err}
	case errors.Is(err, client.ErrLimitMismatch) && ce.Limit > 0:
		return &friendly{msg: fmt.Sprintf("%s's permits are held under limit %d: pass --permits %d", name, ce.Limit, ce.Limit), err: err}
	}
	return err
}

var semaphoreSeats = &seatKind[client.SemaphoreInfo]{flag: "semaphore", noun: "permit", column: "HELD", view: semaphoreView}

// eventFilter is the kind and name that history's and watch's
// --election, --semaphore and --rwlock ask for; at most one of them may
// be given.
func eventFilter(election, semaphore, rwlock string) (kind, name string, err error) {
	for _, f := range []struct{ kind, name string }{{"election", election}, {"semaphore", semaphore}, {"rwlock", rwlock}} {
		if f.name == "" {
			continue
		}
		if kind != "" {
			return "", "", usagef("--election, --semaphore and --rwlock exclude each other")
		}
		kind, name = f.kind, f.name
	}
	return kind, name, nil
}

// semaphoreView is s as the commands show it: its limit, and how many of
// its permits are held.
func semaphoreView(s *client.SemaphoreInfo) seatThing {
	return seatThing{
		name: s.Name, extra: map[string]any{"limit": s.Limit},
		rows: [][2]string{{"limit", strconv.Itoa(s.Limit)}, {"held", fmt.Sprintf("%d of %d", len(s.Holders), s.Limit)}},
		cell: fmt.Sprintf("%d/%d", len(s.Holders), s.Limit), holders: views(s.Holders, permitHold), waiters: s.Waiters,
	}
}

func permitHold(p *client.PermitInfo) seatHold {
	return seatHold{
		name: p.Name, owner: p.Owner, session: p.Session, token: p.Token, ttl: p.TTL,
		acquired: p.AcquiredAt, expires: p.ExpiresAt, metadata: p.Metadata,
		label: "permit", extra: map[string]any{"limit": p.Limit},
	}
}
