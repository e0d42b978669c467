// Package fence is the engine's fenced values: registers that take a
// write only with a fencing token at least as large as every earlier
// write's, and, when asked, only while that token still holds a named
// lock, election or write hold, compared in the write's own txn. They are
// what makes a paused holder's late write harmless to a resource that
// checks nothing itself.
//
// A register is two keys (internal/store/keys.go): fenced/<resource>, its
// value and the token that wrote it, and fencemax/<resource>, the largest
// token seen, zero-padded so that etcd's compare of values orders tokens.
// It knows nothing of the hold engine: package lock hands it the caps it
// enforces (Config) and re-exports its types and errors.
package fence
