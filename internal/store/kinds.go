package store

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
// hold ("~" is not a name character). The engine's keys (Keys; the schema is in lock/doc.go) are
// built from that key name, so every kind shares one queue, one grant on
// release, one recorder and one trail, and each kind still has a
// namespace of its own:
//
//	locks/billing             the lock "billing"
//	locks/~election:billing   the election "billing"
//	locks/~semaphore:jobs#0   permit 0 of the semaphore "jobs"
//	locks/~rwlock:catalog#w   the write hold of the read/write lock "catalog"
//	locks/~rwlock:catalog#r0  a read hold of it
//
// Tagged keys sort after every lock's ("~" is above every name
// character), so a listing of locks stops before them (KindRange).
//
// A lock or an election has one holder, so one holder key: its key name.
// A semaphore has up to its limit of holders at once, each in a seat of
// its own: the key name, "#" (no name character either) and the seat's
// number, below the limit. Each seat is a lock of the engine (its
// holder key, its token, its audit records, its expiry); what makes
// them one semaphore is that they share the thing's queue (Keys.Queue
// takes the thing's key name of a seat's), so a waiter is granted
// whichever seat frees first, and the limit, which bounds the seat
// numbers (lock/semaphore.go). A read/write lock has a writer's seat, "#w",
// and readers' seats, "#r" and a number below MaxReaders
// (lock/rwlock.go). Seats are numbered, never named after their holds, so
// their keys are reused: etcd keeps a deleted key in its index until
// compaction, and ranges over seats would otherwise slow down.

// The tags of the kinds that are not locks.
const (
	electionTag  = "~election:"
	semaphoreTag = "~semaphore:"
	rwlockTag    = "~rwlock:"
)

// SeatSep separates a thing's key name from one of its seats'.
const SeatSep = '#'

// KeyName is the name the engine keeps the thing of kind k named name
// under. name must be valid (ValidName).
func KeyName(k EventKind, name string) string {
	switch k {
	case KindElection:
		return electionTag + name
	case KindSemaphore:
		return semaphoreTag + name
	case KindRWLock:
		return rwlockTag + name
	}
	return name
}

// ThingOf is the kind and name of the thing kept under key name key, or
// under one of its seats.
func ThingOf(key string) (EventKind, string) {
	key = ThingKey(key)
	if name, ok := strings.CutPrefix(key, electionTag); ok {
		return KindElection, name
	}
	if name, ok := strings.CutPrefix(key, semaphoreTag); ok {
		return KindSemaphore, name
	}
	if name, ok := strings.CutPrefix(key, rwlockTag); ok {
		return KindRWLock, name
	}
	return KindLock, key
}

// ThingKey is the key name of the thing that key, a key name or a seat's
// (WriterSeat's, a permit's: under SeatsOf), belongs to.
func ThingKey(key string) string {
	if i := strings.IndexByte(key, SeatSep); i >= 0 {
		return key[:i]
	}
	return key
}

// WriterSeat is the key name of the writer's seat of the read/write lock
// kept under key name thing, and ReaderSeats that of its readers' seats
// but for their numbers.
func WriterSeat(thing string) string  { return thing + string(SeatSep) + "w" }
func ReaderSeats(thing string) string { return thing + string(SeatSep) + "r" }

// HasSeats reports whether the thing kept under key name key (or one of
// its seats) keeps its holds in seats.
func HasSeats(key string) bool {
	k, _ := ThingOf(key)
	return k == KindSemaphore || k == KindRWLock
}

// SeatsOf is the key prefix of every seat of thing under base (such as
// Keys.Locks): it matches seat keys only, since "#" follows the whole
// name.
func SeatsOf(base, thing string) string { return base + thing + string(SeatSep) }

// KindRange is the range of keys under base (such as Keys.Locks) that
// holds the things of kind k whose names start with prefix.
func KindRange(base string, k EventKind, prefix string) (start, end string) {
	start = base + KeyName(k, prefix)
	if k == KindLock && prefix == "" {
		return start, base + "~" // the tagged kinds sort after every lock
	}
	return start, clientv3.GetPrefixRangeEnd(start)
}

// HoldEvent is the event typ of a hold of the thing kept under key (or
// one of its seats): its kind names it, and an election's hold begins as
// elected and ends by a release as resigned. A lock's events keep the
// layout they always had (Lock set, Kind left for DecodeEvent to fill),
// so a lock's records are the same bytes as before elections existed.
func HoldEvent(key string, typ EventType) Event {
	kind, name := ThingOf(key)
	switch kind {
	case KindLock:
		return Event{Type: typ, Lock: name}
	case KindElection:
		switch typ {
		case EventAcquired:
			typ = EventElected
		case EventReleased:
			typ = EventResigned
		}
	}
	return Event{Type: typ, Kind: kind, Name: name}
}

// BeginsHold reports whether an event of type t begins a hold: its
// pending record's CreateRevision is then the hold's token.
func BeginsHold(t EventType) bool { return t == EventAcquired || t == EventElected }
