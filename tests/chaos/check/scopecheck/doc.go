// Package scopecheck is the fault-injection suite's checker of
// permissions by prefix (tests/chaos, scope_test.go): what a client whose
// credential has narrow rules (a policy file's "n.": write, "shared.":
// read) asked for and saw through a run's faults, held against its rules
// and against the audit trail.
//
// It checks that no request outside the rules succeeded (each was
// refused 403 forbidden, naming the credential's prefixes, or got no
// answer: a fault's), that no request inside them was refused as
// forbidden, that nothing an answer or an event stream gave it (list
// entries, history pages, sessions, holders, stream events) names
// anything it may not read, that its streams, resumed with Last-Event-ID
// across node failures, left out no event it may read, that the trail
// holds no event of its credential on a name it may not write, and that
// the run was not vacuous: it wrote, was refused, and saw events.
//
// It reads the rules itself (Rules: the longest prefix decides), apart
// from the server's package auth, so that a bug there is not copied here.
// Like package check, it starts nothing and never fails a test: Check
// returns what it found.
//
//	rules := scopecheck.Rules{"n.": scopecheck.Write, "shared.": scopecheck.Read}
//	rep := scopecheck.Check(requests, events, scopecheck.Config{Credential: "narrow", Rules: rules})
//	for _, p := range rep.Problems {
//		t.Error("scope:", p)
//	}
package scopecheck
