package embedetcd

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// NoSpace reports whether etcd's NOSPACE alarm is raised in the cluster,
// as this member's alarm store says: no raft round, so a readiness probe
// may ask it every time. Any member's alarm counts, since etcd refuses
// writes cluster-wide while one is raised.
func (m *Member) NoSpace() bool {
	for _, a := range m.etcd.Server.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// Defragment rewrites the member's backend file without its free pages,
// which is what gives space back under the quota (compaction frees pages
// but leaves the file's size). The member serves nothing while it runs.
// It goes to the server directly: the in-process client's
// Maintenance.Defragment cannot be used, because etcd's v3client builds
// its maintenance server without the health notifier that Defragment
// calls (v3rpc.NewMaintenanceServer(s, nil)), so it panics.
func (m *Member) Defragment() error { return m.etcd.Server.Defragment() }
