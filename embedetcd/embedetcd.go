package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/featuregate"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/txn"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/baton-dev/baton/internal/tlsfiles"
)

// Config describes the member. Start from NewConfig.
type Config struct {
	// Name is the member's name in the cluster.
	Name string
	// Dir holds the WAL and snapshots.
	Dir string
	// PeerURL is where other members reach this one (listen and advertise).
	PeerURL string
	// ClientURL is where etcd clients (etcdctl, other tools) reach it over
	// TCP. Empty means the member has no TCP client listener at all: baton
	// itself needs none (Client is in-process), and ClientSocket keeps
	// local tools working.
	ClientURL string
	// ClientSocket serves etcd's client API, plain, on a unix socket at
	// SocketPath(Dir) as well. Start makes Dir 0700 first, so the socket
	// admits only the data dir's owner (and root), who can read the WAL
	// anyway. It is advertised as the member's client URL when ClientURL
	// is empty.
	ClientSocket bool
	// JSONGateway serves etcd's HTTP/JSON gateway (/v3/…) on the client
	// listeners. It is off unless asked for: the gateway executes a POST
	// whatever its Content-Type, and a browser sends a text/plain POST to
	// any site without a preflight, so any web page open on the machine
	// could delete keys through it, CORS or not. etcd's tools and "baton
	// member" speak gRPC and need none of it.
	JSONGateway bool
	// AllowedHosts, when set, are the Host names the client listeners
	// answer over plain HTTP (any port; "*" for any), in place of the
	// default: the loopback names on a loopback listener, any Host
	// otherwise. baton passes its own --allowed-hosts, so the client port
	// keeps the HTTP API's Host rule.
	AllowedHosts []string
	// ListenPeerURL and ListenClientURL are where the member listens,
	// when that differs from the URLs it advertises (a container listens
	// on 0.0.0.0 and is reached by its host name; etcd binds only to IP
	// addresses). Empty means the advertised URL.
	ListenPeerURL, ListenClientURL string
	// InitialCluster lists every member as NAME=PEER-URL,…; empty means
	// this member alone.
	InitialCluster string
	// ClusterState is "new" to form a cluster, "existing" to join one.
	ClusterState string
	// LogLevel is etcd's own log level: debug, info, warn or error.
	LogLevel string
	// CompactionRetention is how much revision history etcd keeps for
	// watches to resume from and reads at past revisions: every
	// CompactionRetention etcd compacts away what is older than that, so
	// it holds between one and two of them (periodic compaction). Until
	// then every write's old revision stays in the backend file and every
	// deleted key in the key index; NewConfig sets
	// DefaultCompactionRetention. 0 means the member never compacts by
	// itself: its user does (baton's engine, lock.Config's
	// CompactionRetention, which waits for the audit trail).
	CompactionRetention time.Duration
	// QuotaBackendBytes is the member's backend quota (etcd's
	// --quota-backend-bytes): past it etcd raises its NOSPACE alarm and
	// refuses every write until space is freed and the alarm disarmed.
	// 0 means etcd's default, 2 GiB.
	QuotaBackendBytes int64
	// MaxTxnOps is the most ops a txn sent to this member may hold
	// (etcd's --max-txn-ops); NewConfig sets DefaultMaxTxnOps.
	MaxTxnOps int
	// StartTimeout bounds how long Start waits for the member to be ready
	// (for a cluster: for a quorum to elect a leader); 0 means no bound
	// but ctx.
	StartTimeout time.Duration
	// HeartbeatInterval and ElectionTimeout are etcd's raft timing
	// (--heartbeat-interval, --election-timeout); 0 means etcd's defaults,
	// 100 ms and 1 s, which baton's nodes keep. A member alone in its
	// cluster has no peer to miss a heartbeat from, so tests shorten both
	// to elect it in a few milliseconds instead of about one election
	// timeout. etcd's shortest lease is 1.5 election timeouts, rounded up
	// to a second.
	HeartbeatInterval, ElectionTimeout time.Duration

	// PeerTLSInfo, with CertFile and KeyFile, puts traffic between members
	// on TLS: the member serves its peer URL with that certificate and
	// presents it when it dials other members, so it needs both the server
	// and the client key usage, and its SANs must name the member's host
	// (etcd checks a peer's client certificate against the address the
	// peer connects from). With TrustedCAFile both sides verify against
	// that CA, and etcd then requires every peer to present a certificate
	// it signed, whatever ClientCertAuth says; ClientCertAuth without it
	// verifies peers' certificates against the system's roots. Every peer
	// URL, this member's and InitialCluster's, must then be https://. etcd
	// reads the certificate and key at every handshake, so renewed files
	// need no restart; the CA is read once.
	PeerTLSInfo transport.TLSInfo
	// PeerAutoTLS makes etcd generate a self-signed peer certificate under
	// Dir: traffic is encrypted, but no member authenticates another, so it
	// stops passive eavesdropping only. It excludes PeerTLSInfo.
	PeerAutoTLS bool
	// ClientTLSInfo and ClientAutoTLS do the same for the client URL, the
	// port that etcdctl and "baton member" use (baton reaches its own member
	// in-process). With ClientTLSInfo.TrustedCAFile every client must
	// present a certificate signed by that CA.
	ClientTLSInfo transport.TLSInfo
	ClientAutoTLS bool
}

// NewConfig returns a single-member configuration on etcd's default ports.
func NewConfig() Config {
	return Config{
		Name:                "default",
		Dir:                 "baton-data",
		PeerURL:             "http://127.0.0.1:2380",
		ClientURL:           "http://127.0.0.1:2379",
		ClusterState:        embed.ClusterStateFlagNew,
		LogLevel:            "warn",
		CompactionRetention: DefaultCompactionRetention,
		StartTimeout:        time.Minute,
		MaxTxnOps:           DefaultMaxTxnOps,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.Name == "" {
		return errors.New("embedetcd: Name must not be empty")
	}
	if c.Dir == "" {
		return errors.New("embedetcd: Dir must not be empty")
	}
	if c.CompactionRetention != 0 && c.CompactionRetention < MinCompactionRetention {
		return fmt.Errorf("embedetcd: CompactionRetention must be 0 or at least %s (start from NewConfig)", MinCompactionRetention)
	}
	if c.MaxTxnOps < 128 {
		return errors.New("embedetcd: MaxTxnOps must be at least 128, etcd's default (start from NewConfig)")
	}
	for field, u := range map[string]string{"PeerURL": c.PeerURL, "ClientURL": c.ClientURL, "ListenPeerURL": c.ListenPeerURL, "ListenClientURL": c.ListenClientURL} {
		if u == "" && field != "PeerURL" {
			continue
		}
		if _, err := parseURL(u); err != nil {
			return fmt.Errorf("embedetcd: %s: %w", field, err)
		}
	}
	if c.ClientURL == "" {
		switch {
		case c.ListenClientURL != "":
			return errors.New("embedetcd: ListenClientURL is set without ClientURL: with no ClientURL there is no TCP client listener")
		case !c.ClientTLSInfo.Empty() || c.ClientAutoTLS:
			return errors.New("embedetcd: ClientTLSInfo and ClientAutoTLS need a ClientURL: the socket is served plain, guarded by the data dir's permissions")
		}
	}
	if c.ClientSocket {
		if p := SocketPath(c.Dir); len(p) > MaxSocketPath {
			return fmt.Errorf("embedetcd: socket path %s is %d bytes, over the %d a unix socket allows: use a shorter Dir", p, len(p), MaxSocketPath)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("embedetcd: LogLevel %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.ClusterState != embed.ClusterStateFlagNew && c.ClusterState != embed.ClusterStateFlagExisting {
		return fmt.Errorf("embedetcd: ClusterState %q: want new or existing", c.ClusterState)
	}
	peerURLs := map[string]string{"PeerURL": c.PeerURL, "ListenPeerURL": c.ListenPeerURL}
	for _, m := range strings.Split(c.InitialCluster, ",") {
		if name, u, ok := strings.Cut(strings.TrimSpace(m), "="); ok {
			peerURLs["InitialCluster member "+name] = u
		}
	}
	if err := validateTLS("Peer", c.PeerTLSInfo, c.PeerAutoTLS, peerURLs); err != nil {
		return err
	}
	return validateTLS("Client", c.ClientTLSInfo, c.ClientAutoTLS, map[string]string{"ClientURL": c.ClientURL, "ListenClientURL": c.ListenClientURL})
}

// validateTLS checks one side's TLS settings (kind is "Peer" or "Client")
// against the URLs it serves or dials: TLS on means https:// everywhere,
// and https:// needs TLS on. A mix would fail at the first handshake with
// an error far from its cause.
func validateTLS(kind string, info transport.TLSInfo, auto bool, urls map[string]string) error {
	field := func(f string) string { return kind + "TLSInfo." + f }
	switch {
	case info.CertFile != "" && info.KeyFile == "":
		return fmt.Errorf("embedetcd: %s is set without %s", field("CertFile"), field("KeyFile"))
	case info.KeyFile != "" && info.CertFile == "":
		return fmt.Errorf("embedetcd: %s is set without %s", field("KeyFile"), field("CertFile"))
	case info.TrustedCAFile != "" && info.CertFile == "":
		return fmt.Errorf("embedetcd: %s needs %s and %s: a CA alone turns no TLS on", field("TrustedCAFile"), field("CertFile"), field("KeyFile"))
	case info.ClientCertAuth && info.CertFile == "":
		return fmt.Errorf("embedetcd: %s needs %s and %s", field("ClientCertAuth"), field("CertFile"), field("KeyFile"))
	case auto && (info.CertFile != "" || info.TrustedCAFile != "" || info.ClientCertAuth):
		return fmt.Errorf("embedetcd: %sAutoTLS generates its own certificate: leave %sTLSInfo empty with it", kind, kind)
	}
	on := auto || info.CertFile != ""
	names := make([]string, 0, len(urls))
	for name := range urls {
		names = append(names, name)
	}
	sort.Strings(names) // the same error for the same config, every time
	for _, name := range names {
		u, err := url.Parse(urls[name])
		if urls[name] == "" || err != nil {
			continue // checked elsewhere, or etcd's own parse says more
		}
		switch {
		case on && u.Scheme != "https":
			return fmt.Errorf("embedetcd: %s %q must be https:// when %s TLS is on", name, urls[name], strings.ToLower(kind))
		case !on && u.Scheme == "https":
			return fmt.Errorf("embedetcd: %s %q is https:// but %s TLS is off (set %sTLSInfo or %sAutoTLS)", name, urls[name], strings.ToLower(kind), kind, kind)
		}
	}
	return nil
}

// SocketName is the file name of ClientSocket's socket in the data dir.
const SocketName = "etcd.sock"

// MaxSocketPath is the longest path a unix socket can have: sun_path is
// 108 bytes on Linux (104 on the BSDs), its NUL included.
const MaxSocketPath = 103

// SocketPath is where a member with ClientSocket and data dir dir serves
// its client API. Its URL for etcd clients is SocketURL(dir).
func SocketPath(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Join(dir, SocketName)
}

// SocketURL is SocketPath as an etcd client endpoint (unix:///…).
func SocketURL(dir string) string {
	return (&url.URL{Scheme: "unix", Path: SocketPath(dir)}).String()
}

func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s)://host:port URL", s)
	}
	return u, nil
}

// Member is a running embedded etcd member.
type Member struct {
	etcd    *embed.Etcd
	client  *clientv3.Client
	once    sync.Once
	closing *atomic.Bool
	removed *atomic.Bool // etcd said so in its log (see quietCore)
	// maxTxnOps is the Config's MaxTxnOps.
	maxTxnOps int
}

// Start starts the member and waits until it is ready to serve. On error
// nothing it started is left running.
func Start(ctx context.Context, c Config) (*Member, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg, err := c.embedConfig()
	if err != nil {
		return nil, err
	}
	closing, removed := new(atomic.Bool), new(atomic.Bool)
	lg, err := newLogger(c.LogLevel, closing, removed)
	if err != nil {
		return nil, err
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)

	if c.ClientSocket {
		// etcd makes the data dir only after it has bound its listeners.
		if err := privateDir(c.Dir); err != nil {
			return nil, err
		}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	if err := c.awaitReady(ctx, e); err != nil {
		closing.Store(true)
		// A member that never became ready must be stopped before Close:
		// Close first waits for the client servers, which start only once
		// the member is ready or stopping, so it would wait for ever for
		// a member still waiting for its quorum.
		e.Server.HardStop()
		e.Close()
		return nil, err
	}
	return &Member{etcd: e, client: v3client.New(e.Server), closing: closing, removed: removed, maxTxnOps: c.MaxTxnOps}, nil
}

// embedConfig is etcd's configuration of the member c describes, but for
// its logger. Its TLS files are read, so that a bad one fails here.
func (c Config) embedConfig() (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	if c.HeartbeatInterval > 0 {
		cfg.TickMs = uint(c.HeartbeatInterval.Milliseconds())
	}
	if c.ElectionTimeout > 0 {
		cfg.ElectionMs = uint(c.ElectionTimeout.Milliseconds())
	}
	peer := c.setURLs(cfg)
	cfg.EnableGRPCGateway = c.JSONGateway
	cfg.InitialCluster = c.InitialCluster
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = c.Name + "=" + peer.String()
	}
	cfg.ClusterState = c.ClusterState
	// etcd would find a bad file only at a listener's set-up (without
	// naming it when the key does not match) or at the first handshake.
	for _, s := range []struct {
		kind string
		info transport.TLSInfo
	}{{"peer", c.PeerTLSInfo}, {"client", c.ClientTLSInfo}} {
		if err := tlsfiles.Check(s.info.CertFile, s.info.KeyFile, s.info.TrustedCAFile); err != nil {
			return nil, fmt.Errorf("embedetcd: %s TLS: %w", s.kind, err)
		}
	}
	cfg.PeerTLSInfo, cfg.PeerAutoTLS = c.PeerTLSInfo, c.PeerAutoTLS
	cfg.ClientTLSInfo, cfg.ClientAutoTLS = c.ClientTLSInfo, c.ClientAutoTLS
	cfg.LogLevel = c.LogLevel
	// etcd stops its gRPC servers before it closes the backend, but over
	// TLS (where gRPC runs under its HTTP server) with Stop, which does not
	// wait for handlers: a watch's send loop could then read a previous
	// value from the closed backend, and the process panics
	// (etcd-io/etcd#14256). Waiting for the handlers keeps every read
	// before the close; they return as soon as their connections close.
	cfg.GRPCAdditionalServerOptions = append(cfg.GRPCAdditionalServerOptions, grpc.WaitForHandlers(true))
	cfg.QuotaBackendBytes = c.QuotaBackendBytes
	cfg.MaxTxnOps = uint(c.MaxTxnOps)
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "0" // off
	if c.CompactionRetention > 0 {
		cfg.AutoCompactionRetention = c.CompactionRetention.String()
	}
	// Without checkpoints a restart or a new leader resets every lease to
	// its full TTL; the audit trail's retention leases run for days.
	if fg, ok := cfg.ServerFeatureGate.(featuregate.MutableFeatureGate); ok {
		if err := fg.Set("LeaseCheckpoint=true,LeaseCheckpointPersist=true"); err != nil {
			return nil, fmt.Errorf("embedetcd: enable lease checkpoints: %w", err)
		}
	}
	return cfg, nil
}

// setURLs sets where cfg listens and what it advertises, and the Host
// names and origins its client listener answers; it returns the peer
// URL. c is valid (Validate).
func (c Config) setURLs(cfg *embed.Config) (peer *url.URL) {
	peer, _ = parseURL(c.PeerURL)
	listenPeer := peer
	if c.ListenPeerURL != "" {
		listenPeer, _ = parseURL(c.ListenPeerURL)
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*listenPeer}, []url.URL{*peer}
	// etcd runs with no client listener at all (nothing in its embed
	// package needs one, and the in-process client needs none); the
	// member list then shows no client URL for this member.
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = nil, nil
	var listenClient *url.URL
	if c.ClientURL != "" {
		client, _ := parseURL(c.ClientURL)
		listenClient = client
		if c.ListenClientURL != "" {
			listenClient, _ = parseURL(c.ListenClientURL)
		}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*listenClient}, []url.URL{*client}
	}
	if c.ClientSocket {
		sock := url.URL{Scheme: "unix", Path: SocketPath(c.Dir)}
		cfg.ListenClientUrls = append(cfg.ListenClientUrls, sock)
		if c.ClientURL == "" {
			cfg.AdvertiseClientUrls = []url.URL{sock}
		}
	}
	cfg.CORS, cfg.HostWhitelist = noOrigin, allowedHosts(listenClient)
	if c.AllowedHosts != nil {
		cfg.HostWhitelist = hostSet(c.AllowedHosts)
	}
	return peer
}

// awaitReady makes the client socket its owner's alone, then waits until
// the started member e is ready, within StartTimeout and ctx; the caller
// closes e on error.
func (c Config) awaitReady(ctx context.Context, e *embed.Etcd) error {
	if c.ClientSocket {
		// The directory already admits only its owner; the socket's own
		// mode (umask's) should not say otherwise if it is ever loosened.
		if err := os.Chmod(SocketPath(c.Dir), 0o600); err != nil {
			return fmt.Errorf("start etcd: client socket: %w", err)
		}
	}
	var timeout <-chan time.Time
	if c.StartTimeout > 0 {
		timer := time.NewTimer(c.StartTimeout)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("start etcd: %w", err)
	case <-timeout:
		return fmt.Errorf("start etcd: not ready within %s (is a quorum of the initial cluster up?)", c.StartTimeout)
	case <-ctx.Done():
		return fmt.Errorf("start etcd: %w", ctx.Err())
	}
}

// noOrigin is a CORS set that lets no browser page read an answer: etcd
// answers any Origin when the set is empty or holds "*", and otherwise
// only the origins in it. Its one entry is no origin a browser sends
// (those are "null" or scheme://host[:port]), so no answer carries
// Access-Control-Allow-Origin. Nothing etcd serves is meant for a page.
var noOrigin = map[string]struct{}{"baton:no-cross-origin-access": {}}

// loopbackHosts are the Host names a member listening on loopback (or on
// its socket alone) answers over plain HTTP, any port: the HTTP API's
// rule, against DNS rebinding. etcd compares the Host without its port;
// "[::1]" is a Host without one.
var loopbackHosts = map[string]struct{}{"localhost": {}, "127.0.0.1": {}, "::1": {}, "[::1]": {}}

// allowedHosts is etcd's HostWhitelist for a client listener at listen
// (nil: the socket only). etcd checks it on plain HTTP only; over TLS any
// Host is served, as the HTTP API serves any on a non-loopback address.
func allowedHosts(listen *url.URL) map[string]struct{} {
	if listen == nil {
		return loopbackHosts
	}
	h := listen.Hostname()
	if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
		return loopbackHosts
	}
	return map[string]struct{}{"*": {}}
}

// hostSet is etcd's form of an allowed-hosts list: it compares a Host
// without its port, and "[::1]" also as "::1".
func hostSet(hosts []string) map[string]struct{} {
	set := map[string]struct{}{}
	for _, h := range hosts {
		h = strings.ToLower(h)
		set[h] = struct{}{}
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			set[h[1:len(h)-1]] = struct{}{}
		}
	}
	return set
}

// privateDir makes dir, or narrows it, to 0700: the socket in it is
// exactly as private as the directory (whatever the socket file's own
// mode, which umask sets), and etcd wants its data dir 0700 anyway.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("embedetcd: data dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("embedetcd: data dir: %w", err)
	}
	return nil
}

// Client returns the in-process client. It is closed by Close.
func (m *Member) Client() *clientv3.Client { return m.client }

// Etcd returns the embedded server, for cluster status.
func (m *Member) Etcd() *embed.Etcd { return m.etcd }

// HasLeader reports whether the member knows a leader now. A member cut off
// from the majority loses it within about an election timeout (raft's
// pre-vote and check-quorum are on in etcd).
func (m *Member) HasLeader() bool { return m.etcd.Server.Leader() != 0 }

// DefaultCompactionRetention is a member's CompactionRetention unless its
// Config says otherwise. A lock service rewrites its keys all the time:
// a lock cycle leaves about 2 KB of old revisions and a few deleted keys
// behind (docs/PERFORMANCE.md, "Sustained load"), so with an hour of
// them a node's key index and backend file grow for two hours, and about
// a hundred cycles a second beside a full audit trail fill the default
// 2 GiB quota. baton's watches resume from the keys themselves
// when the revisions they need are gone (lock's recorder, history index
// and event hubs), so they need only minutes of history.
const DefaultCompactionRetention = time.Minute

// MinCompactionRetention is the shortest CompactionRetention a member
// takes: below it the engine's watches would fall behind compaction, and
// start over from its keys, in an ordinary leader election.
const MinCompactionRetention = 30 * time.Second

// DefaultMaxTxnOps is a member's --max-txn-ops unless its Config says
// otherwise: eight times etcd's default, so that the history index
// writes a few hundred events per txn (lock's historyIndex). The limit
// is checked where a txn is received, so a txn of this many ops is fine
// on this member whatever other members set.
const DefaultMaxTxnOps = 1024

// MaxTxnOps is the most ops a txn sent to this member may hold.
func (m *Member) MaxTxnOps() int { return m.maxTxnOps }

// unavailable is err, from the server's read path, as its gRPC layer
// would answer it: the caller's context's end, or Unavailable (no leader,
// a leader change, a timeout, a stopping server are all the read path
// fails with), which store's classification knows.
func unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return status.Error(codes.Unavailable, err.Error())
}

// RangePage is store.Member's: r served from the member's store without
// the count of the rest of the range that etcd's Range makes, as each
// chunk of its RangeStream is (which the in-process client cannot call).
func (m *Member) RangePage(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	s := m.etcd.Server
	if !r.Serializable {
		if err := s.LinearizableReadNotify(ctx); err != nil {
			return nil, unavailable(ctx, err)
		}
	}
	resp, _, err := txn.Range(ctx, s.Logger(), s.KV(), r, false)
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	resp.Header = &pb.ResponseHeader{ClusterId: uint64(s.Cluster().ID()), MemberId: uint64(s.MemberID()), Revision: resp.Header.GetRevision(), RaftTerm: s.Term()}
	return resp, nil
}

// IsLeader reports whether this member leads its cluster now.
func (m *Member) IsLeader() bool {
	s := m.etcd.Server
	return s.Leader() != 0 && s.Leader() == s.MemberID()
}

// Stopped is closed when the etcd server stops, by Close or on its own
// (Removed tells whether it was taken out of the cluster).
func (m *Member) Stopped() <-chan struct{} { return m.etcd.Server.StopNotify() }

// LeaderChanged returns a channel closed when the member next learns of a
// new leader. Losing the leader closes nothing: HasLeader tells that.
func (m *Member) LeaderChanged() <-chan struct{} { return m.etcd.Server.LeaderChangedNotify() }

// IsStopped reports whether the etcd server has stopped.
func (m *Member) IsStopped() bool {
	select {
	case <-m.etcd.Server.StopNotify():
		return true
	default:
		return false
	}
}

// Removed reports whether this member was removed from the cluster; etcd
// stops a removed member's server about a second after the removal. A
// member told of its removal by a peer can stop before its own
// membership records it, so the removal etcd logs (quietCore) counts as
// well as the membership.
func (m *Member) Removed() bool {
	return m.removed.Load() || m.etcd.Server.IsIDRemoved(uint64(m.etcd.Server.MemberID()))
}

// Err reports fatal errors of the running server.
func (m *Member) Err() <-chan error { return m.etcd.Err() }

// Close stops the member. It is safe to call more than once.
func (m *Member) Close() {
	m.once.Do(func() {
		m.closing.Store(true)
		m.client.Close()
		m.etcd.Close()
	})
}

// newLogger builds etcd's zap logger at level, writing JSON to stderr.
func newLogger(level string, closing, removed *atomic.Bool) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(level); err != nil {
		return nil, fmt.Errorf("embedetcd: log level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	// Stack traces of etcd's own functions help etcd's developers, not an
	// operator reading why a start failed: only at debug level.
	zc.DisableStacktrace = lvl > zapcore.DebugLevel
	lg, err := zc.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return quietCore{c, closing, removed} }))
	if err != nil {
		return nil, fmt.Errorf("embedetcd: build logger: %w", err)
	}
	return lg, nil
}

// quietCore drops etcd log lines that mean nothing to a baton operator:
// a few warnings that do not apply to an embedded member (quietMessages),
// and, once Close has begun, the errors etcd logs about its own listeners
// closing ("setting up serving from embedded etcd failed … server closed",
// "stopping insecure grpc server due to error … use of closed network
// connection"). Those would alarm on every clean shutdown; before Close
// they still show, because then they are real.
type quietCore struct {
	zapcore.Core
	closing *atomic.Bool
	// removed is set when etcd logs removedMessage, whatever the level
	// etcd logs at: Enabled lets warnings through to Check for that.
	removed *atomic.Bool
}

// removedMessage is what etcd logs when it stops a member that was removed
// from the cluster: right after "server error … the member has been
// permanently removed", whether it learned so by applying the removal or
// from a peer refusing it. Its own membership may not say removed then.
const removedMessage = "data-dir used by this member must be removed"

func (q quietCore) With(f []zapcore.Field) zapcore.Core {
	return quietCore{q.Core.With(f), q.closing, q.removed}
}

func (q quietCore) Enabled(lvl zapcore.Level) bool {
	return lvl >= zapcore.WarnLevel || q.Core.Enabled(lvl)
}

func (q quietCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.Message == removedMessage {
		q.removed.Store(true)
	}
	if ent.Message == storageVersionMessage {
		if !q.Core.Enabled(ent.Level) {
			return ce
		}
		return ce.AddCore(ent, termPendingCore{q.Core})
	}
	for _, m := range quietMessages {
		if strings.Contains(ent.Message, m) {
			return ce
		}
	}
	if q.closing.Load() {
		for _, m := range closingMessages {
			if strings.Contains(ent.Message, m) {
				return ce
			}
		}
	}
	return q.Core.Check(ent, ce)
}

// storageVersionMessage is what etcd's storage-version monitor logs when it
// cannot record the cluster's version in the backend.
const storageVersionMessage = "failed to update storage version"

// termPendingCore drops storageVersionMessage when its error is that the
// backend holds no raft term yet. The monitor first runs as the cluster
// version is set, which on a member that elects itself within a backend
// commit interval (100 ms) comes before the commit that saves the term;
// it tries again every 4 s and then succeeds, so the line says nothing.
// Any other error still shows.
type termPendingCore struct{ zapcore.Core }

func (t termPendingCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	for _, f := range fields {
		if err, ok := f.Interface.(error); ok && f.Key == "error" && strings.Contains(err.Error(), "missing term information") {
			return nil
		}
	}
	return t.Core.Write(ent, fields)
}

// quietMessages are warnings that do not apply to an embedded member:
// baton's clients use the in-process client, not the shared client port,
// the member name is baton's own flag, and baton does not use etcd auth.
var quietMessages = []string{
	"Running http and grpc server on single port",
	"it isn't recommended to use default name",
	"simple token is not cryptographically signed",
	// Logged only as StartEtcd fails, whose error (a port in use, say)
	// baton reports itself, in one line.
	"creating peer listener failed",
	"closing peer listener",
	"closing client listener",
}

// closingMessages are what a clean Close makes etcd log.
var closingMessages = []string{
	"setting up serving from embedded etcd failed",
	"grpc server due to error",
}
