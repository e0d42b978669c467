// Package caps keeps the engine's storage caps (lock.Config's MaxLocks,
// MaxSessions, MaxFencedValues) in constant time per request: a Tally
// estimates how many keys are under a capped prefix from a count-only
// read made in the background, plus this node's own creates since, so
// that no request counts a prefix whose size users control. It also keeps
// etcd's NOSPACE alarm as last listed, where the engine has no member of
// its own to ask.
package caps
