package lock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Leader tracking. Every etcd call of the engine is bound to the term it
// began in (Engine.op), and a term ends at a leader change, so calls that
// a change leaves hanging fail at once. The embedded member says itself
// when a leader comes (followLeader); over external etcd a poll asks
// (pollLeader), for the metrics only.

// trackLeader follows the leader until the engine stops: rl is where
// pollLeader keeps what it learns of an external cluster's.
func (e *Engine) trackLeader(rl *remoteLeader) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if e.cfg.Embedded == nil {
			e.pollLeader(rl)
		} else {
			e.followLeader()
		}
	}()
}

// hasLeader is what baton_etcd_has_leader reads: 1 while the member behind
// the engine knows a leader, as the member itself says, or rl as polled.
func (e *Engine) hasLeader(rl *remoteLeader) func() float64 {
	return func() float64 {
		known := rl.known.Load()
		if e.cfg.Embedded != nil {
			known = e.cfg.Embedded.HasLeader()
		}
		if known {
			return 1
		}
		return 0
	}
}

// leaderPollEvery is how often an engine over external etcd asks whether
// there is a leader. etcd tells a remote client nothing of leader changes
// unless asked; one serializable, count-only read a second is cheap.
const leaderPollEvery = time.Second

// remoteLeader tracks the leader of an external etcd cluster for the
// metrics: a serializable read with WithRequireLeader fails when the
// member answering knows no leader, and its header carries the raft term,
// which grows with every election.
type remoteLeader struct {
	known atomic.Bool
	term  uint64
}

// pollLeader runs until the engine stops. Over external etcd only: the
// embedded member tells of leaders itself (Config.LeaderChanged).
func (e *Engine) pollLeader(rl *remoteLeader) {
	tick := time.NewTicker(leaderPollEvery)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(e.stop, leaderPollEvery)
		var resp *clientv3.GetResponse
		err := ErrUnavailable
		if !e.memberStopped() { // a serializable read of a stopped member panics
			resp, err = e.cli.Get(clientv3.WithRequireLeader(ctx), e.keys.Recorder(),
				clientv3.WithSerializable(), clientv3.WithCountOnly())
		}
		cancel()
		if err == nil {
			if t := resp.Header.RaftTerm; t != rl.term {
				if rl.term != 0 {
					e.metrics.leaderChanges.Inc()
				}
				rl.term = t
			}
		}
		rl.known.Store(err == nil)
		select {
		case <-e.stop.Done():
			return
		case <-tick.C:
		}
	}
}

// followLeader starts a new term at every leader change, ending the old
// one and so the etcd calls made in it. etcd announces a new leader, but
// not its loss, so HasLeader is also polled: a node cut off from the
// majority sees its leader go within about an election timeout, and
// its calls in flight fail then instead of at OpTimeout.
func (e *Engine) followLeader() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	hasLeader := e.cfg.Embedded.HasLeader
	for {
		changed := e.cfg.Embedded.LeaderChanged()
		term, end := context.WithCancel(e.stop)
		e.term.Store(&term)
		led := hasLeader()
	wait:
		for {
			select {
			case <-changed:
				e.metrics.leaderChanges.Inc()
				break wait
			case <-tick.C:
				if hasLeader() != led {
					break wait
				}
			case <-e.stop.Done():
				end()
				return
			}
		}
		end()
	}
}

// errNoLeader is wrapped in the ErrUnavailable that CheckLeader returns.
var errNoLeader = errors.New("no leader: this node's etcd member is cut off from the majority of its cluster, or an election is in progress")

// CheckLeader returns an ErrUnavailable at once when the member behind the
// engine knows no leader (EmbeddedMember.HasLeader), and nil otherwise.
func (e *Engine) CheckLeader() error {
	if e.cfg.Embedded != nil && !e.cfg.Embedded.HasLeader() {
		return fmt.Errorf("%w: %w", ErrUnavailable, errNoLeader)
	}
	return nil
}
