package lock

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"github.com/baton-dev/baton/lock/internal/session"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The validators run before the engine touches etcd, so this target calls
// them on an engine that has a configuration and nothing else: any input
// that got past them would reach etcd, and fail the target loudly there
// (nil client) rather than quietly.

// Independent statements of docs/API.md's rules, written from the contract and
// not from the validators, so that the two check each other.

func nameOK(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// ownerOK: 1-128 printable characters (runes of valid UTF-8).
func ownerOK(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n := 0
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
		n++
	}
	return n >= 1 && n <= 128
}

// metadataOK: at most 16 string pairs, 4 KiB in all; keys not empty.
func metadataOK(md map[string]string) bool {
	size := 0
	for k, v := range md {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
		size += len(k) + len(v)
	}
	return len(md) <= 16 && size <= 4096
}

// sessionOK: the hex of a positive int64 lease ID, at most 16 digits.
func sessionOK(s string) (int64, bool) {
	if len(s) < 1 || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return int64(v), v >= 1 && v <= math.MaxInt64
}

// splitMetadata turns fuzzer bytes into a metadata map: pairs separated
// by NUL, key and value by '='. The fuzzer reaches every shape that way.
func splitMetadata(b string) map[string]string {
	if b == "" {
		return nil
	}
	md := map[string]string{}
	for _, kv := range strings.Split(b, "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		md[k] = v
	}
	return md
}

func FuzzAcquireValidation(f *testing.F) {
	// Seeds: the cases of validation_test.go, good and bad.
	long := strings.Repeat("n", 129)
	for _, s := range []struct {
		name, owner, session, md string
		ttl, wait, delay         time.Duration
	}{
		{name: "nightly-recon", owner: "w1"},
		{name: "Az09._:-" + strings.Repeat("n", 120), owner: strings.Repeat("é", 128), ttl: 24 * time.Hour, wait: 5 * time.Minute, delay: time.Hour},
		{name: "ok", owner: "worker 1 (10.0.0.1:4711)", md: "k=v\x00k2=v2", ttl: 2 * time.Second},
		{name: "", owner: "w1"}, {name: long, owner: "w1"}, {name: "a/b", owner: "w1"}, {name: "a b", owner: "w1"}, {name: "schlüssel", owner: "w1"},
		{name: "ok", owner: ""}, {name: "ok", owner: long}, {name: "ok", owner: "w\x001"}, {name: "ok", owner: "w\n1"}, {name: "ok", owner: "w\xff"},
		{name: "ok", owner: "w1", md: "=v"}, {name: "ok", owner: "w1", md: "k=" + strings.Repeat("v", 4096)},
		{name: "ok", owner: "w1", ttl: 1999 * time.Millisecond}, {name: "ok", owner: "w1", ttl: -time.Second}, {name: "ok", owner: "w1", ttl: 24*time.Hour + time.Second},
		{name: "ok", owner: "w1", session: "694d2279b4919071", ttl: 10 * time.Second}, {name: "ok", owner: "w1", session: "694d2279b4919071"},
		{name: "ok", owner: "w1", session: "00000000000000A1"},
		{name: "ok", owner: "w1", wait: 5*time.Minute + time.Millisecond}, {name: "ok", owner: "w1", wait: -time.Second}, {name: "ok", owner: "w1", delay: -time.Second},
		{name: "ok", owner: "w1", session: "not-a-lease"}, {name: "ok", owner: "w1", session: "0"}, {name: "ok", owner: "w1", session: "1234567890abcdef0"},
		{name: "ok", owner: "w1", session: "ffffffffffffffff"}, {name: "ok", owner: "w1", session: "+1"}, {name: "ok", owner: "w1", session: "0x1"},
	} {
		f.Add(s.name, s.owner, s.session, s.md, int64(s.ttl), int64(s.wait), int64(s.delay))
	}
	cfg := core.DefaultConfig()
	e := &Engine{core: &core.Engine{Cfg: cfg, Keys: store.Keys{Prefix: cfg.Prefix}}}
	f.Fuzz(func(t *testing.T, name, owner, session, md string, ttl, wait, delay int64) {
		req := core.AcquireRequest{
			Name: name, Owner: owner, Session: session, Metadata: splitMetadata(md),
			TTL: time.Duration(ttl), Wait: time.Duration(wait), LockDelay: time.Duration(delay),
		}
		// What docs/API.md allows, field by field. The TTL is the default when
		// absent (zero) and must be absent with a session.
		sid, sessOK := sessionOK(session)
		bad := map[string]bool{
			"name":       !nameOK(thingName(name)),
			"owner":      !ownerOK(owner),
			"metadata":   !metadataOK(req.Metadata),
			"session":    session != "" && !sessOK,
			"ttl":        session != "" && ttl != 0 || session == "" && ttl != 0 && (req.TTL < 2*time.Second || req.TTL > 24*time.Hour),
			"wait":       req.Wait < 0 || req.Wait > 5*time.Minute,
			"lock_delay": req.LockDelay < 0 || req.LockDelay > cfg.MaxLockDelay,
		}
		anyBad := false
		for _, b := range bad {
			anyBad = anyBad || b
		}

		a, err := e.core.NewAcquirer(context.Background(), req, nil)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) || ie.Reason == "" {
				t.Fatalf("%+v: error %T %v, want an *InvalidError with a reason", req, err, err)
			}
			if !bad[ie.Field] {
				t.Fatalf("%+v: refused for %q (%s), which docs/API.md allows; at fault: %v", req, ie.Field, ie.Reason, bad)
			}
			return
		}
		if anyBad {
			t.Fatalf("%+v accepted, yet docs/API.md forbids %v", req, bad)
		}
		if session != "" {
			if a.Session != clientLease(sid) || a.Req.Session != strconv.FormatInt(sid, 16) {
				t.Fatalf("session %q read as lease %x spelt %q", session, a.Session, a.Req.Session)
			}
			if back, ok := store.ParseLeaseHex(a.Req.Session); !ok || back != a.Session {
				t.Fatalf("session %q: its canonical spelling %q does not read back", session, a.Req.Session)
			}
		} else if a.Req.TTL < cfg.MinTTL || a.Req.TTL > cfg.MaxTTL || ttl == 0 && a.Req.TTL != cfg.DefaultTTL {
			t.Fatalf("ttl %v became %v", req.TTL, a.Req.TTL)
		}
	})
}

func FuzzSessionValidation(f *testing.F) {
	for _, s := range []struct {
		owner string
		ttl   time.Duration
		id    string
	}{
		{"worker-1", 30 * time.Second, "694d2279b4919071"}, {"", 0, "0"}, {"w\t1", time.Second, "zz"}, {"w1", 25 * time.Hour, "ffffffffffffffff"},
		{"w1", 24 * time.Hour, "7fffffffffffffff"}, {"w1", 2 * time.Second, "1"}, {"é", -1, "-1"},
	} {
		f.Add(s.owner, int64(s.ttl), s.id)
	}
	cfg := core.DefaultConfig()
	c := &core.Engine{Cfg: cfg, Keys: store.Keys{Prefix: cfg.Prefix}}
	e := &Engine{core: c, sessions: session.New(c, nil)}
	f.Fuzz(func(t *testing.T, owner string, ttl int64, id string) {
		// CreateSession checks its owner and TTL so, before any call.
		if err := hold.CheckOwner(owner); (err == nil) != ownerOK(owner) {
			t.Fatalf("owner %q: checkOwner says %v, docs/API.md says ok=%v", owner, err, ownerOK(owner))
		} else if err != nil && !isInvalid(err, "owner") {
			t.Fatalf("owner %q: %v does not name owner", owner, err)
		}
		d := time.Duration(ttl)
		if err := e.core.CheckTTL("ttl", d); (err == nil) != (d >= 2*time.Second && d <= 24*time.Hour) {
			t.Fatalf("ttl %v: checkTTL says %v", d, err)
		} else if err != nil && !isInvalid(err, "ttl") {
			t.Fatalf("ttl %v: %v does not name ttl", d, err)
		}
		// Session IDs in paths: a lease ID in hex, or not found.
		lid, err := e.sessions.SessionLease(id)
		want, ok := sessionOK(id)
		switch {
		case ok != (err == nil):
			t.Fatalf("session %q: %v, want ok=%v", id, err, ok)
		case err != nil && !errors.Is(err, ErrSessionNotFound):
			t.Fatalf("session %q: %v, want ErrSessionNotFound", id, err)
		case ok && int64(lid) != want:
			t.Fatalf("session %q read as %x, want %x", id, lid, want)
		}
		if ok {
			if back, ok2 := store.ParseLeaseHex(store.LeaseHex(lid)); !ok2 || back != lid {
				t.Fatalf("lease %x: hex %q reads back as %x, %v", lid, store.LeaseHex(lid), back, ok2)
			}
		}
		// And the other way: every positive ID round-trips through hex.
		if n := int64(uint64(ttl) &^ (1 << 63)); n > 0 {
			if back, ok := store.ParseLeaseHex(store.LeaseHex(clientLease(n))); !ok || int64(back) != n {
				t.Fatalf("lease %x does not round-trip through %q", n, store.LeaseHex(clientLease(n)))
			}
		}
	})
}

func isInvalid(err error, field string) bool {
	var ie *InvalidError
	return errors.As(err, &ie) && ie.Field == field && ie.Reason != ""
}

func clientLease(n int64) clientv3.LeaseID { return clientv3.LeaseID(n) }

// thingName is the name of the thing kept under key name name: the
// engine takes the key names of every kind (internal/store/kinds.go).
func thingName(name string) string {
	_, n := store.ThingOf(name)
	return n
}
