package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FollowLeader follows the leader until the owner closes: on an embedded
// member it starts a new term at every leader change (followLeader);
// over external etcd it polls whether there is a leader (pollLeader),
// reading probe count-only, for HasLeader. Run it once, in a goroutine
// of its own.
func (c *Etcd) FollowLeader(probe string) {
	if c.Member == nil {
		c.pollLeader(probe)
	} else {
		c.followLeader()
	}
}

// HasLeader reports whether the member behind these calls knows a
// leader, as the member itself says, or as last polled.
func (c *Etcd) HasLeader() bool {
	if c.Member != nil {
		return c.Member.HasLeader()
	}
	return c.remoteLeader.Load()
}

// leaderPollEvery is how often calls over external etcd ask whether there
// is a leader. etcd tells a remote client nothing of leader changes
// unless asked; one serializable, count-only read a second is cheap.
const leaderPollEvery = time.Second

// pollLeader runs until the owner closes. A serializable read with
// WithRequireLeader fails when the member answering knows no leader, and
// its header carries the raft term, which grows with every election.
func (c *Etcd) pollLeader(probe string) {
	tick := time.NewTicker(leaderPollEvery)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(c.closed, leaderPollEvery)
		resp, err := c.Cli.Get(clientv3.WithRequireLeader(ctx), probe, clientv3.WithSerializable(), clientv3.WithCountOnly())
		cancel()
		if err == nil {
			if t := resp.Header.RaftTerm; t != c.remoteTerm {
				if c.remoteTerm != 0 {
					c.leaderChanged()
				}
				c.remoteTerm = t
			}
		}
		c.remoteLeader.Store(err == nil)
		select {
		case <-c.closed.Done():
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
func (c *Etcd) followLeader() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	hasLeader := c.Member.HasLeader
	for {
		changed := c.Member.LeaderChanged()
		term, end := context.WithCancel(c.closed)
		c.term.Store(&term)
		led := hasLeader()
	wait:
		for {
			select {
			case <-changed:
				c.leaderChanged()
				break wait
			case <-tick.C:
				if hasLeader() != led {
					break wait
				}
			case <-c.closed.Done():
				end()
				return
			}
		}
		end()
	}
}

// errNoLeader is wrapped in the ErrUnavailable that CheckLeader returns.
var errNoLeader = errors.New("no leader: this node's etcd member is cut off from the majority of its cluster, or an election is in progress")

// CheckLeader returns an ErrUnavailable at once when the embedded member
// knows no leader (Member.HasLeader), and nil otherwise.
func (c *Etcd) CheckLeader() error {
	if c.Member != nil && !c.Member.HasLeader() {
		return fmt.Errorf("%w: %w", ErrUnavailable, errNoLeader)
	}
	return nil
}
