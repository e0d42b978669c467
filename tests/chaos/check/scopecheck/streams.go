package scopecheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// An event as a stream and the trail both name it.
type eventKey struct {
	rev  int64
	typ  string
	name string
}

// maxMissed is how many missed events a stream's report lists.
const maxMissed = 10

// streams checks that each stream left out no event the credential may
// read. A connection that resumed after revision since and last gave
// revision last had to give every such event of the trail between them:
// a stream sends the events of one revision together and in revision
// order, so every revision before last came whole; last itself may have
// been cut short, and the next connection resumes before it.
func (rep *Report) streams(reqs []Request, events []check.AuditEvent, rules Rules) {
	for _, stream := range []string{StreamEvents, StreamKeys} {
		got := map[eventKey]bool{}
		type span struct{ from, to int64 }
		var spans []span
		for _, r := range reqs {
			if r.Stream != stream || !r.ok() {
				continue
			}
			last := r.Since
			for _, s := range r.Seen {
				got[eventKey{s.Revision, s.Type, s.Name}] = true
				last = max(last, s.Revision)
			}
			spans = append(spans, span{r.Since, last})
		}
		missed := map[eventKey]bool{}
		for _, ev := range events {
			if ev.Type != "gap" && (!rules.Allows(ev.Name, Read) || stream == StreamKeys && ev.Kind != "key") {
				continue
			}
			if !slices.ContainsFunc(spans, func(s span) bool { return s.from < ev.Revision && ev.Revision < s.to }) {
				continue
			}
			k := eventKey{ev.Revision, ev.Type, ev.Name}
			rep.Expected++
			if !got[k] {
				missed[k] = true
			}
		}
		rep.missed(stream, missed)
	}
}

// missed reports the events stream left out, the first maxMissed of them.
func (rep *Report) missed(stream string, missed map[eventKey]bool) {
	if len(missed) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(missed), func(a, b eventKey) int {
		return cmp.Or(cmp.Compare(a.rev, b.rev), cmp.Compare(a.name, b.name), cmp.Compare(a.typ, b.typ))
	})
	var list []string
	for _, k := range keys[:min(len(keys), maxMissed)] {
		list = append(list, fmt.Sprintf("%s %q at %d", k.typ, k.name, k.rev))
	}
	rep.problemf("the %s stream left out %d events the trail has and the credential may read, between revisions its connections gave: %v", stream, len(keys), list)
}
