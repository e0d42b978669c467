package jsonw

import (
	"slices"
	"sync"
	"unicode/utf8"
)

// MaxPooled bounds the buffers kept for reuse: an answer with 4 KiB of
// metadata, a long queue or a 64 KiB request body should not pin a
// large buffer for good.
const MaxPooled = 16 << 10

var pool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// GetBuf returns an empty buffer from the pool; PutBuf gives it back.
func GetBuf() *[]byte {
	bp := pool.Get().(*[]byte)
	*bp = (*bp)[:0]
	return bp
}

// PutBuf returns a buffer of GetBuf's unless it grew past MaxPooled.
func PutBuf(bp *[]byte) {
	if cap(*bp) <= MaxPooled {
		pool.Put(bp)
	}
}

// AppendNames appends field, which opens a list, and names, unless there
// are none (the field is omitempty).
func AppendNames(b []byte, field string, names []string) []byte {
	if len(names) == 0 {
		return b
	}
	b = append(b, field...)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, name)
	}
	return append(b, ']')
}

// AppendStringMap appends m as encoding/json writes a map[string]string:
// keys sorted bytewise, null for a nil map.
func AppendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	switch len(m) {
	case 0:
	case 1:
		for k, v := range m {
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, v)
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
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, m[k])
		}
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping on (json.Marshal's and json.Encoder's default): <, >
// and & as \u003c, \u003e and \u0026; control characters as \b, \f, \n,
// \r, \t or \u00XX; invalid UTF-8 as \ufffd; U+2028 and U+2029 escaped.
func AppendString[S []byte | string](b []byte, s S) []byte {
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
