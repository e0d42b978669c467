package api

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-dev/baton/api/internal/jsonw"
	"github.com/baton-dev/baton/api/internal/request"

	"github.com/labstack/echo/v4"
)

// stdJSON is what echo's c.JSON writes for v: encoding/json's Encoder,
// HTML escaping on, a newline at the end.
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// trickyRunes are what a string's encoding can get wrong: JSON's own
// escapes, the HTML characters encoding/json escapes, control
// characters, the JavaScript line separators, multi-byte runes, and
// bytes that are not UTF-8 (a lone continuation byte, a truncated
// sequence, an overlong encoding, a surrogate).
var trickyRunes = []string{
	"a", "Z", "0", " ", "-", ":", ".", "_", "/", "\"", "\\", "<", ">", "&", "'", "\x00", "\x01", "\x1f", "\x7f",
	"\b", "\f", "\n", "\r", "\t", "\u2028", "\u2029", "é", "ſ", "K", "日", "😀", "\ufffd",
	"\x80", "\xff", "\xe6\x97", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
}

func randString(r *rand.Rand) string {
	var sb strings.Builder
	for range r.IntN(12) {
		sb.WriteString(trickyRunes[r.IntN(len(trickyRunes))])
	}
	return sb.String()
}

func randTime(r *rand.Rand) Time {
	switch r.IntN(4) {
	case 0:
		return Time{}
	case 1: // beyond year 9999 and before year 0: Format still renders them
		return Time(time.Unix(r.Int64N(1<<40)-1<<39, 0))
	}
	loc := time.FixedZone("x", (r.IntN(48)-24)*1800)
	return Time(time.Unix(1_700_000_000+r.Int64N(1e9), r.Int64N(1e9)).In(loc))
}

func randLock(r *rand.Rand) *Lock {
	l := &Lock{
		Name: randString(r), Owner: randString(r), Token: r.Int64() - r.Int64(), TTL: randString(r),
		AcquiredAt: randTime(r), ExpiresAt: randTime(r),
	}
	if r.IntN(2) == 0 {
		l.Session = randString(r)
	}
	if r.IntN(3) == 0 {
		l.LockDelay = randString(r)
	}
	if r.IntN(5) > 0 { // else nil: null
		l.Metadata = map[string]string{}
		for range r.IntN(5) {
			l.Metadata[randString(r)] = randString(r)
		}
	}
	for range r.IntN(3) {
		w := Waiter{Owner: randString(r), Position: r.IntN(1000) - 10, Since: randTime(r)}
		if r.IntN(2) == 0 {
			w.Session = randString(r)
		}
		l.Waiters = append(l.Waiters, w)
	}
	return l
}

func randSession(r *rand.Rand) *Session {
	s := &Session{ID: randString(r), Owner: randString(r), TTL: randString(r), CreatedAt: randTime(r), ExpiresAt: randTime(r)}
	if r.IntN(5) > 0 { // else nil: null
		s.Locks = []string{}
		for range r.IntN(4) {
			s.Locks = append(s.Locks, randString(r))
		}
	}
	return s
}

func TestAppendLock_WritesExactlyWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		l := randLock(r)
		got := append(appendLock(nil, l), '\n')
		if want := stdJSON(t, l); !bytes.Equal(got, want) {
			t.Fatalf("case %d: %#v\n got %s\nwant %s", i, l, got, want)
		}
	}
	if got, want := append(appendLock(nil, nil), '\n'), stdJSON(t, (*Lock)(nil)); !bytes.Equal(got, want) {
		t.Fatalf("nil lock: got %s, want %s", got, want)
	}
}

func TestAppendSession_WritesExactlyWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	for i := range 20000 {
		s := randSession(r)
		got := append(appendSession(nil, s), '\n')
		if want := stdJSON(t, s); !bytes.Equal(got, want) {
			t.Fatalf("case %d: %#v\n got %s\nwant %s", i, s, got, want)
		}
	}
	if got, want := append(appendSession(nil, nil), '\n'), stdJSON(t, (*Session)(nil)); !bytes.Equal(got, want) {
		t.Fatalf("nil session: got %s, want %s", got, want)
	}
}

// Every string, byte by byte: what the fuzzer finds, this pins down.
func FuzzAppendString(f *testing.F) {
	for _, s := range trickyRunes {
		f.Add(s)
	}
	f.Add("owner <w1> & \"co\"\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonw.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		if got := jsonw.AppendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q as []byte: got %s, want %s", s, got, want)
		}
		if !utf8.ValidString(s) {
			return
		}
		// A lock holding s everywhere a string goes, metadata keys too.
		l := &Lock{Name: s, Owner: s, Session: s, TTL: s, LockDelay: s, Metadata: map[string]string{s: s, s + "x": "", "": s},
			Waiters: []Waiter{{Owner: s, Session: s}}}
		if got, want := append(appendLock(nil, l), '\n'), stdJSON(t, l); !bytes.Equal(got, want) {
			t.Fatalf("lock of %q: got %s, want %s", s, got, want)
		}
	})
}

// writeLock and writeSession answer with the same status, headers and
// bytes as c.JSON.
func TestWriteLock_AnswersAsEchoJSONDoes(t *testing.T) {
	e := echo.New()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		l, s := randLock(r), randSession(r)
		status := []int{http.StatusOK, http.StatusCreated}[i%2]
		for _, tc := range []struct {
			name      string
			mine, std func(echo.Context) error
		}{
			{"lock", func(c echo.Context) error { return writeLock(c, status, l) }, func(c echo.Context) error { return c.JSON(status, l) }},
			{"session", func(c echo.Context) error { return writeSession(c, status, s) }, func(c echo.Context) error { return c.JSON(status, s) }},
		} {
			answer := func(h func(echo.Context) error) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				if err := h(e.NewContext(httptest.NewRequest(http.MethodPost, "/v1/locks/x", nil), rec)); err != nil {
					t.Fatal(err)
				}
				return rec
			}
			got, want := answer(tc.mine), answer(tc.std)
			if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || len(got.Header()) != len(want.Header()) ||
				got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Fatalf("%s %d: got %d %v %s\nwant %d %v %s", tc.name, i, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
	}
}

// A buffer that grew past jsonw.MaxPooled is dropped, not pooled; the next
// answer is still whole.
func TestWriteLock_LargeAnswers(t *testing.T) {
	e := echo.New()
	big := &Lock{Name: "big", Metadata: map[string]string{}}
	for i := range 200 {
		big.Metadata[strings.Repeat("k", 3)+string(rune('a'+i%26))+strings.Repeat("x", i)] = strings.Repeat("<v>", 40)
	}
	for _, l := range []*Lock{big, {Name: "small", Metadata: map[string]string{}}, big} {
		rec := httptest.NewRecorder()
		if err := writeLock(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec), http.StatusOK, l); err != nil {
			t.Fatal(err)
		}
		if want := stdJSON(t, l); !bytes.Equal(rec.Body.Bytes(), want) {
			t.Fatalf("%s: got %d bytes, want %d", l.Name, rec.Body.Len(), len(want))
		}
	}
}

func BenchmarkWriteLock(b *testing.B) {
	e := echo.New()
	l := &Lock{
		Name: "bench-12345", Owner: "bench-7", Token: 1234567, Session: "694d2279b4919071", TTL: "30s",
		AcquiredAt: Time(time.Now()), ExpiresAt: Time(time.Now().Add(30 * time.Second)), Metadata: map[string]string{},
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/locks/x", nil)
	for _, tc := range []struct {
		name string
		h    func(echo.Context) error
	}{
		{"echo", func(c echo.Context) error { return c.JSON(http.StatusCreated, l) }},
		{"hand", func(c echo.Context) error { return writeLock(c, http.StatusCreated, l) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			c := e.NewContext(req, w)
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				c.Reset(req, w)
				if err := tc.h(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// Time.MarshalJSON renders through appendTime; every Time that reaches a
// body (events, history, problems) keeps its bytes.
func TestTimeMarshalJSON_IsTheQuotedFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		tm := randTime(r)
		got, err := tm.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(time.Time(tm).UTC().Format(timeLayout))
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s, want %s", time.Time(tm), got, want)
		}
	}
}

func BenchmarkDecodeBody(b *testing.B) {
	e := echo.New()
	body := []byte(`{"owner":"bench-7","session":"694d2279b4919071"}`)
	rd := bytes.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/v1/locks/x", nil)
	req.Header.Set("Content-Type", "application/json")
	w := &discardWriter{h: http.Header{}}
	c := e.NewContext(req, w)
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		c.Reset(req, w)
		var v AcquireRequest
		if err := request.Body(c, &v, true); err != nil {
			b.Fatal(err)
		}
	}
}
