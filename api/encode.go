package api

import (
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// The answers of the hot routes (acquire, renew, sessions) are written by
// hand instead of through echo's c.JSON, which runs encoding/json's
// reflection and its Time.MarshalJSON round trip for every Lock. The
// bytes are exactly encoding/json's, trailing newline included: a test
// and a fuzz target compare the two on every field, strings with
// escapes, HTML characters and invalid UTF-8 included.

// maxPooledBuf bounds the buffers kept for reuse (answers here, request
// bodies in decodeBody): a Lock with 4 KiB of metadata, a long queue or
// a 64 KiB body should not pin a large buffer for good.
const maxPooledBuf = 16 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeLock answers with l as c.JSON(status, l) would.
func writeLock(c echo.Context, status int, l *Lock) error {
	return writeBuf(c, status, func(b []byte) []byte { return appendLock(b, l) })
}

// writeSession answers with s as c.JSON(status, s) would.
func writeSession(c echo.Context, status int, s *Session) error {
	return writeBuf(c, status, func(b []byte) []byte { return appendSession(b, s) })
}

// writeBuf sends what appendBody appends, as c.JSON does: Content-Type
// application/json unless set, the status, then the body in one write.
// c.JSON indents when echo is in debug mode or the query has "pretty";
// baton never turns debug on, and the routes that use writeBuf refuse
// every query parameter (query), so neither applies here.
func writeBuf(c echo.Context, status int, appendBody func([]byte) []byte) error {
	bp := bufPool.Get().(*[]byte)
	b := appendBody((*bp)[:0])
	b = append(b, '\n') // json.Encoder ends every value with one
	*bp = b
	defer putBuf(bp)
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// putBuf returns a buffer of bufPool unless it grew too large to keep.
func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledBuf {
		bufPool.Put(bp)
	}
}

// appendLock appends l's JSON as encoding/json writes it (without the
// Encoder's newline).
func appendLock(b []byte, l *Lock) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"name":`...)
	b = appendString(b, l.Name)
	b = append(b, `,"owner":`...)
	b = appendString(b, l.Owner)
	b = append(b, `,"token":`...)
	b = strconv.AppendInt(b, l.Token, 10)
	if l.Session != "" {
		b = append(b, `,"session":`...)
		b = appendString(b, l.Session)
	}
	b = append(b, `,"ttl":`...)
	b = appendString(b, l.TTL)
	b = append(b, `,"acquired_at":`...)
	b = appendTime(b, l.AcquiredAt)
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, l.ExpiresAt)
	if l.LockDelay != "" {
		b = append(b, `,"lock_delay":`...)
		b = appendString(b, l.LockDelay)
	}
	if l.MinHold != "" {
		b = append(b, `,"min_hold":`...)
		b = appendString(b, l.MinHold)
	}
	b = append(b, `,"metadata":`...)
	b = appendStringMap(b, l.Metadata)
	b = appendNames(b, `,"set":[`, l.Set)
	if len(l.Waiters) > 0 {
		b = append(b, `,"waiters":[`...)
		for i, w := range l.Waiters {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"owner":`...)
			b = appendString(b, w.Owner)
			if w.Session != "" {
				b = append(b, `,"session":`...)
				b = appendString(b, w.Session)
			}
			b = append(b, `,"position":`...)
			b = strconv.AppendInt(b, int64(w.Position), 10)
			b = append(b, `,"since":`...)
			b = appendTime(b, w.Since)
			if w.Mode != "" {
				b = append(b, `,"mode":`...)
				b = appendString(b, w.Mode)
			}
			b = appendNames(b, `,"set":[`, w.Set)
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
	b = appendString(b, s.ID)
	b = append(b, `,"owner":`...)
	b = appendString(b, s.Owner)
	b = append(b, `,"ttl":`...)
	b = appendString(b, s.TTL)
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
			b = appendString(b, name)
		}
		b = append(b, ']')
	}
	b = appendNames(b, `,"elections":[`, s.Elections)
	b = appendNames(b, `,"semaphores":[`, s.Semaphores)
	b = appendNames(b, `,"rwlocks":[`, s.RWLocks)
	return append(b, '}')
}

// appendNames appends field, which opens a list, and names, unless there
// are none (the field is omitempty).
func appendNames(b []byte, field string, names []string) []byte {
	if len(names) == 0 {
		return b
	}
	b = append(b, field...)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
	}
	return append(b, ']')
}

// appendTime appends t as Time.MarshalJSON renders it. The layout yields
// no character that needs escaping, but a year beyond 9999 or before 0
// still formats, so it goes through appendString like any string.
func appendTime(b []byte, t Time) []byte {
	var buf [40]byte
	return appendString(b, time.Time(t).UTC().AppendFormat(buf[:0], timeLayout))
}

// appendStringMap appends m as encoding/json writes a map[string]string:
// keys sorted bytewise, null for a nil map.
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	switch len(m) {
	case 0:
	case 1:
		for k, v := range m {
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, v)
		}
	default:
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, m[k])
		}
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping on (json.Marshal's and json.Encoder's default): <, >
// and & as \u003c, \u003e and \u0026; control characters as \b, \f, \n,
// \r, \t or \u00XX; invalid UTF-8 as \ufffd; U+2028 and U+2029 escaped.
func appendString[S []byte | string](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
