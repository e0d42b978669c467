package api

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api/internal/jsonw"
	"github.com/baton-dev/baton/api/internal/scope"
)

// The answers of the hot routes (acquire, renew, sessions) are written by
// hand instead of through echo's c.JSON, which runs encoding/json's
// reflection and its Time.MarshalJSON round trip for every Lock. The
// bytes are exactly encoding/json's, trailing newline included: a test
// and a fuzz target compare the two on every field, strings with
// escapes, HTML characters and invalid UTF-8 included.

// writeLock answers with l as c.JSON(status, l) would, without the names
// c's credential may not read (redactLock).
func writeLock(c echo.Context, status int, l *Lock) error {
	redactLock(c, l)
	return writeBuf(c, status, func(b []byte) []byte { return appendLock(b, l) })
}

// writeSession answers with s as c.JSON(status, s) would, without the
// names c's credential may not read (redactSession).
func writeSession(c echo.Context, status int, s *Session) error {
	redactSession(c, s)
	return writeBuf(c, status, func(b []byte) []byte { return appendSession(b, s) })
}

// redactLock leaves out of l the names of other locks that c's credential
// may not read: its lock set's other members, and its waiters' sets'.
func redactLock(c echo.Context, l *Lock) {
	if l == nil {
		return
	}
	l.Set = scope.Redact(c, l.Set)
	for i := range l.Waiters {
		l.Waiters[i].Set = scope.Redact(c, l.Waiters[i].Set)
	}
}

// redactSession leaves out of s the holds c's credential may not read.
func redactSession(c echo.Context, s *Session) {
	s.Locks, s.Elections = scope.Redact(c, s.Locks), scope.Redact(c, s.Elections)
	s.Semaphores, s.RWLocks = scope.Redact(c, s.Semaphores), scope.Redact(c, s.RWLocks)
}

// writeBuf sends what appendBody appends, as c.JSON does: Content-Type
// application/json unless set, the status, then the body in one write.
// c.JSON indents when echo is in debug mode or the query has "pretty";
// baton never turns debug on, and the routes that use writeBuf refuse
// every query parameter (query), so neither applies here.
func writeBuf(c echo.Context, status int, appendBody func([]byte) []byte) error {
	bp := jsonw.GetBuf()
	b := appendBody(*bp)
	b = append(b, '\n') // json.Encoder ends every value with one
	*bp = b
	defer jsonw.PutBuf(bp)
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// appendLock appends l's JSON as encoding/json writes it (without the
// Encoder's newline).
func appendLock(b []byte, l *Lock) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"name":`...)
	b = jsonw.AppendString(b, l.Name)
	b = append(b, `,"owner":`...)
	b = jsonw.AppendString(b, l.Owner)
	b = append(b, `,"token":`...)
	b = strconv.AppendInt(b, l.Token, 10)
	if l.Session != "" {
		b = append(b, `,"session":`...)
		b = jsonw.AppendString(b, l.Session)
	}
	b = append(b, `,"ttl":`...)
	b = jsonw.AppendString(b, l.TTL)
	b = append(b, `,"acquired_at":`...)
	b = appendTime(b, l.AcquiredAt)
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, l.ExpiresAt)
	if l.LockDelay != "" {
		b = append(b, `,"lock_delay":`...)
		b = jsonw.AppendString(b, l.LockDelay)
	}
	if l.MinHold != "" {
		b = append(b, `,"min_hold":`...)
		b = jsonw.AppendString(b, l.MinHold)
	}
	b = append(b, `,"metadata":`...)
	b = jsonw.AppendStringMap(b, l.Metadata)
	b = jsonw.AppendNames(b, `,"set":[`, l.Set)
	if len(l.Waiters) > 0 {
		b = append(b, `,"waiters":[`...)
		for i, w := range l.Waiters {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"owner":`...)
			b = jsonw.AppendString(b, w.Owner)
			if w.Session != "" {
				b = append(b, `,"session":`...)
				b = jsonw.AppendString(b, w.Session)
			}
			b = append(b, `,"position":`...)
			b = strconv.AppendInt(b, int64(w.Position), 10)
			b = append(b, `,"since":`...)
			b = appendTime(b, w.Since)
			if w.Mode != "" {
				b = append(b, `,"mode":`...)
				b = jsonw.AppendString(b, w.Mode)
			}
			b = jsonw.AppendNames(b, `,"set":[`, w.Set)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendSession appends s's JSON as encoding/json writes it.
func appendSession(b []byte, s *Session) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = jsonw.AppendString(b, s.ID)
	b = append(b, `,"owner":`...)
	b = jsonw.AppendString(b, s.Owner)
	b = append(b, `,"ttl":`...)
	b = jsonw.AppendString(b, s.TTL)
	b = append(b, `,"created_at":`...)
	b = appendTime(b, s.CreatedAt)
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, s.ExpiresAt)
	b = append(b, `,"locks":`...)
	if s.Locks == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, name := range s.Locks {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, name)
		}
		b = append(b, ']')
	}
	b = jsonw.AppendNames(b, `,"elections":[`, s.Elections)
	b = jsonw.AppendNames(b, `,"semaphores":[`, s.Semaphores)
	b = jsonw.AppendNames(b, `,"rwlocks":[`, s.RWLocks)
	if s.Bind != "" {
		b = append(b, `,"bind":`...)
		b = jsonw.AppendString(b, s.Bind)
	}
	if s.Grace != "" {
		b = append(b, `,"grace":`...)
		b = jsonw.AppendString(b, s.Grace)
	}
	return append(b, '}')
}

// appendTime appends t as Time.MarshalJSON renders it. The layout yields
// no character that needs escaping, but a year beyond 9999 or before 0
// still formats, so it goes through jsonw.AppendString like any string.
func appendTime(b []byte, t Time) []byte {
	var buf [40]byte
	return jsonw.AppendString(b, time.Time(t).UTC().AppendFormat(buf[:0], timeLayout))
}
