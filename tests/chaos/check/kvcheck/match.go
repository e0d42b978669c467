package kvcheck

// matching pairs ops with the events they may explain, each at most once:
// Kuhn's augmenting paths on a bipartite graph whose edges fits gives. An
// augmenting path never leaves a matched op or event unmatched, so ops
// matched first (the acknowledged ones) stay matched while the others
// are matched to the events left.
type matching struct {
	fits func(op, ev int) bool
	opOf []int // each event's op, -1 for none
	evOf []int // each op's event, -1 for none
}

func newMatching(ops, evs int, fits func(op, ev int) bool) *matching {
	m := &matching{fits: fits, opOf: make([]int, evs), evOf: make([]int, ops)}
	for i := range m.opOf {
		m.opOf[i] = -1
	}
	for i := range m.evOf {
		m.evOf[i] = -1
	}
	return m
}

// matchOp matches op, moving other ops to other events as need be, and
// reports whether it could.
func (m *matching) matchOp(op int) bool {
	return m.fromOp(op, make([]bool, len(m.opOf)))
}

func (m *matching) fromOp(op int, tried []bool) bool {
	for ev := range m.opOf {
		if tried[ev] || !m.fits(op, ev) {
			continue
		}
		tried[ev] = true
		if m.opOf[ev] < 0 || m.fromOp(m.opOf[ev], tried) {
			m.opOf[ev], m.evOf[op] = op, ev
			return true
		}
	}
	return false
}

// matchEvent matches ev as matchOp does op.
func (m *matching) matchEvent(ev int) bool {
	return m.fromEvent(ev, make([]bool, len(m.evOf)))
}

func (m *matching) fromEvent(ev int, tried []bool) bool {
	for op := range m.evOf {
		if tried[op] || !m.fits(op, ev) {
			continue
		}
		tried[op] = true
		if m.evOf[op] < 0 || m.fromEvent(m.evOf[op], tried) {
			m.evOf[op], m.opOf[ev] = ev, op
			return true
		}
	}
	return false
}
