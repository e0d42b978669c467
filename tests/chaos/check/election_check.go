package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// electionState is ElectionModel's view of one election and the fenced
// resource named like it. It is comparable, as lockState is.
type electionState struct {
	// hold is the leadership: Holder is the leader's token (holderFree
	// when nobody leads, holderUnknown after an Unknown campaign won), and
	// a leadership may end unseen at any moment, as a hold may.
	hold
	// Term is the term of the latest leadership granted, current or not:
	// the next grant's is Term+1, whoever ended the last one and however.
	Term int64
	// Value is the current leader's value: what it campaigned with, or
	// what it proclaimed last. Empty when nobody leads.
	Value string
	fenced
}

// elect is s after a leadership with token (0: unknown), term Term+1 and
// value began; whoever led before has lost it (a waiting campaign's grant
// is the handover of a resignation or an expiry).
func (s electionState) elect(token int64, value string) electionState {
	if token == 0 {
		s.Holder = holderUnknown
	} else {
		s.Holder, s.Last = token, token
	}
	s.Term++
	s.Value = value
	return s
}

// vacate is s with nobody leading.
func (s electionState) vacate() electionState {
	s.Holder, s.Value = holderFree, ""
	return s
}

// vanished is s after the leadership of token ended, if token led: a
// refusal of token proves it does not lead, as for a lock's hold.
func (s electionState) vanished(token int64) electionState {
	if s.Holder == token {
		return s.vacate()
	}
	return s
}

// led returns s with token known to lead, and whether it can: see pin.
func (s electionState) led(token int64) (electionState, bool) {
	h, ok := s.pin(token)
	s.hold = h
	return s, ok
}

// step returns every state s may move to when op takes effect; none means
// op cannot be linearized here.
func (s electionState) step(op Op) []electionState {
	switch op.Kind {
	case Campaign:
		return s.campaign(op)
	case Proclaim:
		next, ok := s.led(op.Token)
		proclaimed := next
		proclaimed.Value = op.Value
		switch op.Result {
		case OK:
			// Token and term stay; the answer is the leadership with
			// its new value.
			if !ok || op.OutToken != op.Token || op.OutTerm != s.Term || op.OutValue != op.Value {
				return nil
			}
			return []electionState{proclaimed}
		case Rejected:
			return []electionState{s.vanished(op.Token)}
		case Unknown:
			if !ok {
				return []electionState{s}
			}
			return uniqueStates(s, proclaimed)
		}
	case Resign:
		switch op.Result {
		case OK:
			if _, ok := s.led(op.Token); !ok {
				return nil
			}
			return []electionState{s.vacate()}
		case Rejected:
			return []electionState{s.vanished(op.Token)}
		case Unknown:
			return uniqueStates(s, s.vanished(op.Token))
		}
	case RenewLeader:
		switch op.Result {
		case OK:
			next, ok := s.led(op.Token)
			if !ok || op.OutToken != op.Token || op.OutTerm != s.Term {
				return nil
			}
			return []electionState{next}
		case Rejected:
			return []electionState{s.vanished(op.Token)}
		case Unknown:
			return []electionState{s}
		}
	case Leader:
		switch op.Result {
		case OK:
			next, ok := s.led(op.OutToken)
			if !ok || op.OutTerm != s.Term || op.OutValue != s.Value {
				return nil
			}
			return []electionState{next}
		case Rejected:
			return []electionState{s.vacate()}
		case Unknown:
			return []electionState{s}
		}
	case FPut:
		return s.fput(op)
	case FGet:
		if s.get(op) {
			return []electionState{s}
		}
	}
	return nil
}

// campaign is step for a campaign, with or without wait: a grant is the
// next term, with a token above every one granted before, and the value
// campaigned with.
func (s electionState) campaign(op Op) []electionState {
	switch op.Result {
	case OK:
		if op.OutToken <= s.Last || op.OutTerm != s.Term+1 || op.OutValue != op.Value {
			return nil
		}
		return []electionState{s.elect(op.OutToken, op.Value)}
	case Rejected:
		// Someone led (or, on a waiting campaign, led all along).
		return []electionState{s}
	case Unknown:
		return []electionState{s, s.elect(0, op.Value)}
	}
	return nil
}

// fput is step for a fenced write whose guard is the election: it is
// accepted only while its token leads, and not_holder proves the token
// does not.
func (s electionState) fput(op Op) []electionState {
	if op.Result == Rejected {
		if op.Code == "not_holder" {
			return []electionState{s.vanished(op.Token)}
		}
		if len(s.put(op)) == 0 {
			return nil
		}
		return []electionState{s}
	}
	next, ok := s.led(op.Token)
	if !ok {
		if op.Result == OK {
			return nil
		}
		return []electionState{s}
	}
	var out []electionState
	for _, f := range s.put(op) {
		if f == s.fenced {
			out = append(out, s)
			continue
		}
		w := next
		w.fenced = f
		out = append(out, w)
	}
	return out
}

// String is the state as the HTML visualisation shows it.
func (s electionState) String() string {
	var b strings.Builder
	switch s.Holder {
	case holderFree:
		b.WriteString("vacant")
	case holderUnknown:
		fmt.Fprintf(&b, "leader ? %s", clipValue(s.Value))
	default:
		fmt.Fprintf(&b, "leader %d %s", s.Holder, clipValue(s.Value))
	}
	fmt.Fprintf(&b, " term %d last %d", s.Term, s.Last)
	b.WriteString(s.fenced.String())
	return b.String()
}

// ElectionModel is the sequential specification of one election together
// with the fenced resource named like it, for porcupine, built as
// LockModel is and partitioned by election. At most one leader at a time,
// each leadership a term one above the last granted and a token above
// every earlier one; proclaim, resign and renew succeed only for the
// current leader's token; a leader's value is what it campaigned with or
// proclaimed last; a fenced write naming the election is accepted only
// while its token leads. A leadership may end unseen (its lease ran out),
// and a refusal of a token proves it has.
func ElectionModel() porcupine.Model { return newModel(electionState{}) }

// CheckElections checks the election ops of ops (those with Election set)
// against ElectionModel, as CheckLinearizable checks the lock ops: Failed
// ops left out, Unknown ones pending to the end, Unknown leader reads and
// renewals left out.
func CheckElections(ops []Op, timeout time.Duration, htmlPath string) (ok bool, err error) {
	return CheckModel(ElectionModel(), Op.onElection, ops, timeout, htmlPath)
}

// ResolveCampaigns returns ops with each Unknown campaign settled by the
// trail, for CheckElections: an Unknown campaign branches the model's
// search (won, with the next term, or not), and a history with a dozen of
// them that is illegal takes porcupine minutes to prove so. A campaign
// whose candidate no other campaign used either has an elected event
// under that candidate, and is then an OK with the event's token, term
// and value, still pending to the end of the history (its grant may land
// after its client gave up), or has none, and then never took effect
// (Failed). events must be the settled trail; CheckElectionAudit checks
// it against the ops on its own.
func ResolveCampaigns(ops []Op, events []AuditEvent) []Op {
	var end int64
	uses := map[electionCandidate]int{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		if op.Kind == Campaign {
			uses[electionCandidate{op.Election, op.Owner}]++
		}
	}
	won := map[electionCandidate]AuditEvent{}
	for _, ev := range events {
		if ev.isElection() && ev.Type == "elected" {
			won[electionCandidate{ev.Name, ev.Owner}] = ev
		}
	}
	out := slices.Clone(ops)
	for i, op := range out {
		k := electionCandidate{op.Election, op.Owner}
		if op.Kind != Campaign || op.Result != Unknown || uses[k] != 1 {
			continue
		}
		ev, ok := won[k]
		if !ok {
			out[i].Result, out[i].Err = Failed, "Unknown, and never elected: "+op.Err
			continue
		}
		out[i].Result, out[i].Err = OK, "Unknown, and elected by the trail: "+op.Err
		out[i].OutToken, out[i].OutTerm, out[i].OutOwner, out[i].OutValue = ev.Token, ev.Term, ev.Owner, eventValue(ev)
		out[i].Return = end + 1
	}
	return out
}

// describeElectionOp reads like "campaign c3 → 4711 t2" or "proclaim 4711 x → ok".
func describeElectionOp(op Op) string {
	out := describeResult(op)
	switch op.Kind {
	case Campaign:
		wait := ""
		if op.Wait != "" {
			wait = " wait " + op.Wait
		}
		if op.Result == OK {
			out = fmt.Sprintf("%d t%d", op.OutToken, op.OutTerm)
		}
		return fmt.Sprintf("campaign %s %s%s → %s", op.Owner, clipValue(op.Value), wait, out)
	case Proclaim:
		return fmt.Sprintf("proclaim %d %s → %s", op.Token, clipValue(op.Value), out)
	case Leader:
		switch op.Result {
		case OK:
			return fmt.Sprintf("leader → %d t%d %s (%s)", op.OutToken, op.OutTerm, clipValue(op.OutValue), op.OutOwner)
		case Rejected:
			return "leader → vacant"
		}
		return fmt.Sprintf("leader → %s", op.Result)
	}
	return fmt.Sprintf("%s %d → %s", op.Kind, op.Token, out)
}

// The audit event types that end a leadership.
var leadershipEnds = []string{"resigned", "expired", "revoked", "session_expired"}

type electionToken struct {
	election string
	token    int64
}

// electionTrail is the election events of an audit trail, by leadership.
type electionTrail struct {
	elected    map[electionToken][]AuditEvent
	ends       map[electionToken][]AuditEvent
	proclaimed map[electionToken][]AuditEvent
	// byElection is each election's elected events in trail order.
	byElection map[string][]AuditEvent
}

func readElectionTrail(events []AuditEvent) electionTrail {
	t := electionTrail{
		elected: map[electionToken][]AuditEvent{}, ends: map[electionToken][]AuditEvent{},
		proclaimed: map[electionToken][]AuditEvent{}, byElection: map[string][]AuditEvent{},
	}
	for _, ev := range events {
		if !ev.isElection() {
			continue
		}
		k := electionToken{ev.Name, ev.Token}
		switch {
		case ev.Type == "elected":
			t.elected[k] = append(t.elected[k], ev)
			t.byElection[ev.Name] = append(t.byElection[ev.Name], ev)
		case ev.Type == "proclaimed":
			t.proclaimed[k] = append(t.proclaimed[k], ev)
		case slices.Contains(leadershipEnds, ev.Type):
			t.ends[k] = append(t.ends[k], ev)
		}
	}
	return t
}

// CheckElectionAudit checks the elections' audit trail against what the
// clients saw. events must be the whole /v1/history, read when nobody
// leads any more, so every leadership has ended, and the elections must be
// new to the cluster. Per election, elected events carry terms 1, 2, 3, …
// in trail order with tokens strictly increasing; every leadership has
// one elected and one end event; every campaign OK has its elected event
// (token, term, candidate), every resign OK its resigned event, every
// proclaim OK exactly one proclaimed event with its value (the workload's
// values are unique); no refused campaign's candidate (when only one
// campaign used it) is elected; and no election shows more elected or proclaimed
// events than its OKs and Unknown ops can explain.
func CheckElectionAudit(ops []Op, events []AuditEvent) []string {
	t := readElectionTrail(events)
	var problems []string
	for _, name := range sortedNames(t.byElection) {
		problems = append(problems, termOrder(name, t.byElection[name])...)
	}
	for _, k := range sortedElectionTokens(t.elected) {
		if n := len(t.elected[k]); n > 1 {
			problems = append(problems, fmt.Sprintf("election %q token %d: %d elected events", k.election, k.token, n))
		}
		switch n := len(t.ends[k]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("election %q token %d: elected but never ended", k.election, k.token))
		case n > 1:
			problems = append(problems, fmt.Sprintf("election %q token %d: %d end events (%s)", k.election, k.token, n, joinEventTypes(t.ends[k])))
		}
	}
	for _, k := range sortedElectionTokens(t.ends) {
		if len(t.elected[k]) == 0 {
			problems = append(problems, fmt.Sprintf("election %q token %d: %s without an elected event", k.election, k.token, joinEventTypes(t.ends[k])))
		}
	}
	return append(problems, t.matchOps(ops)...)
}

// termOrder checks one election's elected events, in trail order.
func termOrder(name string, elected []AuditEvent) []string {
	var problems []string
	for i, ev := range elected {
		if want := int64(i + 1); ev.Term != want {
			problems = append(problems, fmt.Sprintf("election %q: elected event %d (token %d) has term %d, want %d", name, i+1, ev.Token, ev.Term, want))
		}
		if i > 0 && ev.Token <= elected[i-1].Token {
			problems = append(problems, fmt.Sprintf("election %q: term %d's token %d is not above term %d's token %d", name, ev.Term, ev.Token, elected[i-1].Term, elected[i-1].Token))
		}
	}
	return problems
}

// matchOps checks the ops that changed an election against the trail.
func (t electionTrail) matchOps(ops []Op) []string {
	var problems []string
	explained := map[electionToken]bool{}
	unknown := map[string]int{} // Unknown campaigns per election
	proclaims := map[string]int{}
	for _, op := range ops {
		k := electionToken{op.Election, op.Token}
		switch {
		case op.Kind == Campaign && op.Result == Unknown:
			unknown[op.Election]++
		case op.Kind == Campaign && op.Result == OK:
			k.token = op.OutToken
			explained[k] = true
			problems = append(problems, t.matchCampaign(op, t.elected[k])...)
		case op.Kind == Resign && op.Result == OK:
			if !slices.ContainsFunc(t.ends[k], func(ev AuditEvent) bool { return ev.Type == "resigned" }) {
				problems = append(problems, fmt.Sprintf("resign op %d: election %q token %d has no resigned event (ends: %s)", op.ID, op.Election, op.Token, joinEventTypes(t.ends[k])))
			}
		case op.Kind == Proclaim && (op.Result == OK || op.Result == Unknown):
			n := countValue(t.proclaimed[k], op.Value)
			proclaims[op.Election+"\x00"+compactValue(op.Value)]++
			if op.Result == OK && n != 1 {
				problems = append(problems, fmt.Sprintf("proclaim op %d: election %q token %d value %s has %d proclaimed events, want 1", op.ID, op.Election, op.Token, op.Value, n))
			}
		}
	}
	refused := refusedCampaigns(ops)
	phantoms := map[string][]int64{}
	for _, k := range sortedElectionTokens(t.elected) {
		if explained[k] {
			continue
		}
		ev := t.elected[k][0]
		if op, ok := refused[electionCandidate{k.election, ev.Owner}]; ok {
			problems = append(problems, fmt.Sprintf("campaign op %d (client %d, node %d) was refused (%d %s after %s, wait %s), but the trail shows its candidate %q elected in %q with token %d, term %d",
				op.ID, op.Client, op.Node, op.Status, op.Code, time.Duration(op.Return-op.Call).Round(time.Millisecond), op.Wait, ev.Owner, k.election, k.token, ev.Term))
			continue
		}
		phantoms[k.election] = append(phantoms[k.election], k.token)
	}
	for _, k := range sortedElectionTokens(t.proclaimed) {
		for _, ev := range t.proclaimed[k] {
			if proclaims[k.election+"\x00"+eventValue(ev)] == 0 {
				problems = append(problems, fmt.Sprintf("election %q token %d: proclaimed %s, which no proclaim sent", k.election, k.token, eventValue(ev)))
			}
		}
	}
	for _, name := range sortedNames(phantoms) {
		if n := len(phantoms[name]); n > unknown[name] {
			problems = append(problems, fmt.Sprintf("election %q: %d elected events (tokens %v) match no campaign OK, but only %d campaigns were Unknown",
				name, n, phantoms[name], unknown[name]))
		}
	}
	return problems
}

type electionCandidate struct{ election, candidate string }

// refusedCampaigns are the campaigns that were told no (or never reached
// a node) and whose candidate no other campaign in the election used: an
// elected event of that candidate is theirs, and must not exist.
func refusedCampaigns(ops []Op) map[electionCandidate]Op {
	uses := map[electionCandidate]int{}
	refused := map[electionCandidate]Op{}
	for _, op := range ops {
		if op.Kind != Campaign {
			continue
		}
		k := electionCandidate{op.Election, op.Owner}
		uses[k]++
		if op.Result == Rejected || op.Result == Failed {
			refused[k] = op
		}
	}
	for k := range refused {
		if uses[k] > 1 {
			delete(refused, k)
		}
	}
	return refused
}

// matchCampaign checks a campaign OK against its leadership's elected events.
func (t electionTrail) matchCampaign(op Op, evs []AuditEvent) []string {
	if len(evs) == 0 {
		return []string{fmt.Sprintf("campaign op %d: election %q token %d has no elected event", op.ID, op.Election, op.OutToken)}
	}
	ev := evs[0]
	var problems []string
	if ev.Term != op.OutTerm {
		problems = append(problems, fmt.Sprintf("campaign op %d: election %q token %d answered term %d, but the audit says %d", op.ID, op.Election, op.OutToken, op.OutTerm, ev.Term))
	}
	if op.Owner != "" && ev.Owner != op.Owner {
		problems = append(problems, fmt.Sprintf("campaign op %d: election %q token %d won by %q, but the audit says %q", op.ID, op.Election, op.OutToken, op.Owner, ev.Owner))
	}
	if eventValue(ev) != compactValue(op.Value) {
		problems = append(problems, fmt.Sprintf("campaign op %d: election %q token %d campaigned with %s, but the audit says %s", op.ID, op.Election, op.OutToken, op.Value, eventValue(ev)))
	}
	return problems
}

// eventValue is an event's value as the workload wrote it: the string a
// JSON string holds, else the compact JSON.
func eventValue(ev AuditEvent) string {
	var s string
	if json.Unmarshal(ev.Value, &s) == nil {
		return s
	}
	return compactValue(string(ev.Value))
}

func countValue(evs []AuditEvent, value string) int {
	n := 0
	for _, ev := range evs {
		if eventValue(ev) == compactValue(value) {
			n++
		}
	}
	return n
}

func sortedElectionTokens[V any](m map[electionToken]V) []electionToken {
	keys := make([]electionToken, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b electionToken) int {
		return cmp.Or(strings.Compare(a.election, b.election), cmp.Compare(a.token, b.token))
	})
	return keys
}
