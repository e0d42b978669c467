package lock

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Every primitive is a lock underneath. An election is a lock whose
// holder is the leader; its candidates wait in the lock's queue, a
// resignation hands it over in the release txn, and its audit records,
// lock-delay and session membership are a lock's. What tells them apart
// is the name the engine keeps them under: a lock is kept under its own
// name, any other kind under its name behind a tag that no lock name can
// hold ("~" is not a name character). The engine's keys (lock/doc.go) are
// built from that key name, so every kind shares one queue, one grant on
// release, one recorder and one trail, and each kind still has a
// namespace of its own:
//
//	locks/billing             the lock "billing"
//	locks/~election:billing   the election "billing"
//
// Tagged keys sort after every lock's ("~" is above every name
// character), so a listing of locks stops before them (kindRange).

// electionTag prefixes an election's key name.
const electionTag = "~election:"

// keyName is the name the engine keeps the thing of kind k named name
// under. name must be valid (ValidName).
func keyName(k EventKind, name string) string {
	if k == KindElection {
		return electionTag + name
	}
	return name
}

// thingOf is the kind and name of the thing kept under key name key.
func thingOf(key string) (EventKind, string) {
	if name, ok := strings.CutPrefix(key, electionTag); ok {
		return KindElection, name
	}
	return KindLock, key
}

// kindRange is the range of keys under base (such as locksPrefix) that
// holds the things of kind k whose names start with prefix.
func kindRange(base string, k EventKind, prefix string) (start, end string) {
	start = base + keyName(k, prefix)
	if k == KindLock && prefix == "" {
		return start, base + "~" // the tagged kinds sort after every lock
	}
	return start, clientv3.GetPrefixRangeEnd(start)
}

// holdEvent is the event typ of a hold of the thing kept under key: its
// kind names it, and an election's hold begins as elected and ends by a
// release as resigned. A lock's events keep the layout they always had
// (Lock set, Kind left for decodeEvent to fill), so a lock's records are
// the same bytes as before elections existed.
func holdEvent(key string, typ EventType) Event {
	kind, name := thingOf(key)
	if kind == KindLock {
		return Event{Type: typ, Lock: name}
	}
	switch typ {
	case EventAcquired:
		typ = EventElected
	case EventReleased:
		typ = EventResigned
	}
	return Event{Type: typ, Kind: kind, Name: name}
}

// beginsHold reports whether an event of type t begins a hold: its
// pending record's CreateRevision is then the hold's token.
func beginsHold(t EventType) bool { return t == EventAcquired || t == EventElected }
