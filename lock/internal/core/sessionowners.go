package core

import (
	"context"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// maxSessionOwners bounds what sessionOwners keeps: past it, an entry
// picked at random goes (a map's iteration order), which costs the next
// check of that session one read.
const maxSessionOwners = 1 << 16

// sessionOwners remembers, of each session an ownership check has read,
// the credential that created it and its key's CreateRevision. Both are
// fixed for the key's life: a session's record is written once, when the
// session is made. And a txn that acts on the check compares that very
// CreateRevision (SessionGone), so a remembered pair never lets a hold
// into a session that a fresh read would refuse: a session ended since
// fails the compare, as it would after the read. Without it, every
// acquire into a session by a credential that is not an admin read the
// session's record first, a tenth of the lock cycle at 64 clients.
type sessionOwners struct {
	mu sync.Mutex
	m  map[string]sessionOwner
}

type sessionOwner struct {
	credential string
	rev        int64
}

func (s *sessionOwners) get(id string) (sessionOwner, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[id]
	return o, ok
}

func (s *sessionOwners) put(id string, o sessionOwner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]sessionOwner)
	}
	if len(s.m) >= maxSessionOwners {
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[id] = o
}

// forget drops what is remembered of session id, once it is gone.
func (s *sessionOwners) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// SessionOwner returns the ID of the credential that created session id
// ("" without authentication) and the CreateRevision of the session's
// key, which a txn acting on the answer must compare (SessionGone). Once
// read, they are remembered (sessionOwners). It returns
// hold.ErrSessionNotFound when there is no such session.
func (e *Engine) SessionOwner(ctx context.Context, id string) (credential string, rev int64, err error) {
	if o, ok := e.owners.get(id); ok {
		return o.credential, o.rev, nil
	}
	rec, rev, err := e.ReadSession(ctx, id)
	if err != nil {
		return "", 0, err
	}
	e.owners.put(id, sessionOwner{rec.Credential, rev})
	return rec.Credential, rev, nil
}

// SessionGone reports whether a failed txn that compared session id's key
// with rev (0: that it exists) failed for want of that session: kvs, its
// read of the key, finds none, or another key made since under the same
// ID. What was remembered of it is then forgotten.
func (e *Engine) SessionGone(id string, rev int64, kvs []*mvccpb.KeyValue) bool {
	if len(kvs) > 0 && (rev == 0 || kvs[0].CreateRevision == rev) {
		return false
	}
	e.owners.forget(id)
	return true
}
