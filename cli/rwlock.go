package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/client"
)

// This file holds the read/write lock side of the commands: "baton exec
// --read/--write", "status --rwlock", "list --rwlocks" and "revoke
// --rwlock", each beside its lock side in exec.go and cli.go; what it
// shares with semaphores is in seats.go.

// runRWExec is "baton exec --read/--write": CMD runs under a hold of the
// read/write lock name in mode, under the same heldRun as a lock's.
func runRWExec(ctx context.Context, g *globals, cl *client.Client, name, mode string, argv []string, o client.RWOptions, st stopping) error {
	r := startHeldRun(g, "baton exec", argv, st)
	defer r.stop()
	h, end, err := take(ctx, r, &sessionWait{cl, o.Wait, o.Owner, &o.Session, &o.TTL},
		func(ctx context.Context) (*client.RWHold, error) { return cl.AcquireRW(ctx, name, mode, o) },
		func(err error) error { return rwDetail(name, mode, err) })
	if err != nil {
		return err
	}
	defer end()
	env := []string{"BATON_RWLOCK=" + name, "BATON_TOKEN=" + strconv.FormatInt(h.Token(), 10), "BATON_MODE=" + mode}
	return r.run(h, fmt.Sprintf("release %s hold %d of %s", mode, h.Token(), name), h.Release, env)
}

// rwDetail says which holds are in the way of a hold refused, in place of
// the wire error's text; the error still matches client.ErrHeld for the
// exit code.
func rwDetail(name, mode string, err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrHeld) || len(ce.RWHolders) == 0 {
		return err
	}
	hs := make([]string, len(ce.RWHolders))
	for i, h := range ce.RWHolders {
		hs[i] = fmt.Sprintf("%q (%s, token %d)", h.Owner, h.Mode, h.Token)
	}
	return &friendly{msg: fmt.Sprintf("%s: no %s hold: held by %s", name, mode, strings.Join(hs, ", ")), err: err}
}

// rwMode is the mode that exec's --read and --write ask for: "" for
// neither, and a usage error for both, or for either with --permits or
// --lock-delay.
func rwMode(read, write bool, permits int, lockDelay time.Duration) (string, error) {
	switch {
	case read && write:
		return "", usagef("--read and --write exclude each other")
	case !read && !write:
		return "", nil
	case permits > 0:
		return "", usagef("--permits excludes --read and --write")
	case lockDelay != 0:
		return "", usagef("--lock-delay does not apply to a read/write lock (--read, --write)")
	case read:
		return client.Read, nil
	}
	return client.Write, nil
}

var rwlockSeats = &seatKind[client.RWLockInfo]{flag: "rwlock", noun: "hold", column: "MODE", modes: true, view: rwlockView}

// rwlockView is rw as the commands show it: its mode, and each hold's.
func rwlockView(rw *client.RWLockInfo) seatThing {
	return seatThing{
		name: rw.Name, extra: map[string]any{"mode": rw.Mode}, rows: [][2]string{{"mode", rw.Mode}},
		cell: rw.Mode, holders: views(rw.Holders, rwHold), waiters: rw.Waiters,
	}
}

func rwHold(h *client.RWHoldInfo) seatHold {
	return seatHold{
		name: h.Name, owner: h.Owner, session: h.Session, token: h.Token, ttl: h.TTL,
		acquired: h.AcquiredAt, expires: h.ExpiresAt, metadata: h.Metadata,
		label: h.Mode, extra: map[string]any{"mode": h.Mode},
	}
}

// lockHold is a lock in the way of a lock set, as a hold.
func lockHold(l *client.LockInfo) seatHold {
	return seatHold{
		name: l.Name, owner: l.Owner, session: l.Session, token: l.Token, ttl: l.TTL,
		acquired: l.AcquiredAt, expires: l.ExpiresAt, metadata: l.Metadata, label: "lock",
	}
}
