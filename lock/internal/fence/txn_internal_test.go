package fence

import (
	"testing"

	"github.com/baton-dev/baton/internal/store"
)

// TestPutTxn_RefsNameTheirOps: the first write and a later one read the
// resource's maximum and the lock the write requires, each behind its Ref.
func TestPutTxn_RefsNameTheirOps(t *testing.T) {
	keys := store.Keys{Prefix: "/baton/"}
	r := New(Config{Keys: keys})
	for _, first := range []bool{false, true} {
		tx := r.putTxn("r", 5, []byte(`1`), "n", first)
		for name, c := range map[string]struct {
			ref store.Ref
			key string
		}{"max": {tx.max, keys.FenceMax("r")}, "lock": {tx.lock, keys.Lock("n")}} {
			if !c.ref.Ok() {
				t.Fatalf("first=%v: %s names no op", first, name)
			}
			if op := tx.OpOf(c.ref); !op.IsGet() || string(op.KeyBytes()) != c.key {
				t.Fatalf("first=%v: %s is not a get of %q (key %q)", first, name, c.key, op.KeyBytes())
			}
		}
	}
}
