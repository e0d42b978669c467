package node

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/trail"
)

// Config describes a node. Each knob has one home: the engine's are
// lock.Config's, embedded, the audit trail's trail.Config's (Trail), and
// the HTTP server's limits are server's own types; the rest (the etcd
// member, TLS files, the auth file) are the node's. AddFlags registers a
// flag for each knob a command line sets.
type Config struct {
	// Config is the engine's configuration, handed to lock.New as it is:
	// its caps and TTL bounds are set here. Two of its fields serve the
	// node and the trail as well:
	//   - BackendQuota (--etcd-quota-bytes) is also the embedded
	//     member's backend quota (etcd's --quota-backend-bytes); 0 means
	//     etcd's default, 2 GiB. With EtcdEndpoints it tells the engine
	//     the external cluster's quota.
	//   - Logger, when set, is the node's logger as well as the engine's;
	//     nil means one built from LogLevel.
	// Start sets Embedded and DialMember: the node knows whether it runs
	// on its own member.
	lock.Config
	// Trail is the audit trail's configuration, handed to trail.New with
	// BackendQuota and Logger set from Config's.
	Trail trail.Config

	HTTPAddr       string
	DataDir        string
	Name           string
	PeerURL        string
	ClientURL      string
	InitialCluster string
	// ListenPeerURL and ListenClientURL override where etcd listens;
	// empty means PeerURL and ClientURL.
	ListenPeerURL, ListenClientURL string
	// InitialClusterState is "new" to form a cluster, "existing" to join
	// one that a "baton member add" made room in. Only the first start on
	// an empty data dir reads it.
	InitialClusterState string
	// EtcdEndpoints, when set, makes the node a client of that etcd
	// cluster instead of embedding a member.
	EtcdEndpoints []string
	// LogLevel is baton's: debug, info, warn or error. etcd's own logs stay
	// at warn unless it is debug.
	LogLevel        string
	ShutdownTimeout time.Duration
	// StartTimeout bounds how long the embedded member waits, as the node
	// starts, to be ready: for a cluster, for a quorum of the initial
	// members to elect a leader. 0 waits as long as it takes, as etcd
	// itself does, and leaves the bound to a supervisor's probe (a
	// Kubernetes startup probe).
	StartTimeout time.Duration
	// AccessLog writes one info line per HTTP request (server.Config).
	AccessLog bool
	// RateLimit limits each client address and CredentialRateLimit each
	// credential (server.Config): requests per second, 0 = off; burst 0 =
	// one second's worth.
	RateLimit, CredentialRateLimit server.RateLimit
	// StreamLimits cap the event streams of one client address and of one
	// credential on this node (server.Config); 0 means no cap.
	StreamLimits server.StreamLimits
	// AllowedHosts are the Host names the HTTP API answers, any port
	// (server.Config.AllowedHosts; server.AnyHost for any); others get 421
	// host_not_allowed. Empty means server.DefaultAllowedHosts(HTTPAddr):
	// the loopback names on a loopback address, else any.
	AllowedHosts []string
	// AuthFile, when set, turns authentication on with the credentials
	// of this file (see package auth); Reload reads it again.
	AuthFile string

	// TLSCertFile and TLSKeyFile, when set, make the HTTP API HTTPS only
	// (TLS 1.2 or later, Go's default cipher suites): a plain HTTP request
	// on HTTPAddr is refused at the handshake. ReloadTLS reads them again.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile makes the API require a client certificate signed by
	// a CA of this PEM file (read once, at start).
	TLSClientCAFile string

	// PeerCertFile, PeerKeyFile and PeerTrustedCAFile put the embedded
	// member's traffic with other members on TLS; see
	// embedetcd.Config.PeerTLSInfo. With PeerTrustedCAFile every peer must
	// present a certificate that CA signed (etcd's rule). PeerClientCertAuth
	// requires client certificates without a CA too, verified against the
	// system's roots. PeerAutoTLS uses a self-signed certificate instead:
	// encrypted, not authenticated.
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile string
	PeerClientCertAuth                           bool
	PeerAutoTLS                                  bool
	// ClientCertFile, ClientKeyFile, ClientTrustedCAFile and ClientAutoTLS
	// do the same for the embedded member's client URL (etcdctl, "baton
	// member"); with ClientTrustedCAFile every client must present a
	// certificate that CA signed. With AuthFile the client URL is served
	// only with ClientTrustedCAFile (ServesClientTCP).
	ClientCertFile, ClientKeyFile, ClientTrustedCAFile string
	ClientAutoTLS                                      bool
	// ClientJSONGateway serves etcd's HTTP/JSON gateway on the client URL
	// (embedetcd.Config.JSONGateway), for tools that speak etcd's JSON.
	ClientJSONGateway bool
	// EtcdCACertFile, EtcdCertFile and EtcdKeyFile are for EtcdEndpoints
	// (https://): the CA that verifies them (in place of the system's
	// roots), and a client certificate.
	EtcdCACertFile, EtcdCertFile, EtcdKeyFile string
}

// DefaultConfig returns the defaults of docs/API.md, Command line: the
// engine's are lock.DefaultConfig's, the etcd member's embedetcd's.
func DefaultConfig() Config {
	e := embedetcd.NewConfig()
	lc := lock.DefaultConfig()
	lc.BackendQuota = 2 << 30
	tc := trail.DefaultConfig()
	// The trail compacts the embedded member, behind its cursor
	// (trail.Config.CompactionRetention); an external etcd compacts as
	// its operator set it.
	tc.CompactionRetention = e.CompactionRetention
	return Config{
		Config:              lc,
		Trail:               tc,
		HTTPAddr:            "127.0.0.1:8080",
		DataDir:             "./baton-data",
		Name:                e.Name,
		PeerURL:             e.PeerURL,
		ClientURL:           e.ClientURL,
		InitialClusterState: e.ClusterState,
		LogLevel:            "info",
		ShutdownTimeout:     10 * time.Second,
		StartTimeout:        embedetcd.NewConfig().StartTimeout,
		AccessLog:           true,
		StreamLimits:        server.DefaultStreamLimits(),
	}
}

// ServesClientTCP reports whether the embedded member listens on
// ClientURL. The client port speaks etcd's API with none of baton's
// authentication, so with AuthFile it is served only to clients with a
// certificate of ClientTrustedCAFile; without one, and with an empty
// ClientURL, the member serves its client API on the unix socket
// embedetcd.SocketPath(DataDir) alone, for tools on this machine.
func (c Config) ServesClientTCP() bool {
	return c.ClientURL != "" && (c.AuthFile == "" || c.ClientTrustedCAFile != "")
}

// Validate reports the first node setting that cannot work, naming its
// flag: half a key pair, a CA without a certificate, TLS on with http://
// URLs (or off with https:// ones), settings for an etcd the node does
// not use, an --allowed-hosts entry that no Host can match, negative
// rates. Files are read by Start; the engine's settings are checked by
// lock.New and trail.New (lock.Config.Validate, trail.Config.Validate).
func (c Config) Validate() error {
	if err := server.CheckAllowedHosts(c.AllowedHosts); err != nil {
		return fmt.Errorf("--allowed-hosts: %w", err)
	}
	if c.RateLimit.Rate < 0 || c.RateLimit.Burst < 0 || c.CredentialRateLimit.Rate < 0 || c.CredentialRateLimit.Burst < 0 {
		return errors.New("--rate-limit, --rate-burst, --credential-rate-limit and --credential-rate-burst must not be negative (0 = off / default)")
	}
	if c.StartTimeout < 0 {
		return errors.New("--start-timeout must not be negative (0 = wait as long as it takes)")
	}
	if c.BackendQuota < 0 {
		return errors.New("--etcd-quota-bytes must not be negative (0 = etcd's default, 2 GiB)")
	}
	if c.Trail.CompactionRetention < embedetcd.MinCompactionRetention {
		return fmt.Errorf("--etcd-compaction-retention must be at least %s", embedetcd.MinCompactionRetention)
	}
	switch {
	case c.TLSCertFile != "" && c.TLSKeyFile == "":
		return errors.New("--tls-cert needs --tls-key")
	case c.TLSKeyFile != "" && c.TLSCertFile == "":
		return errors.New("--tls-key needs --tls-cert")
	case c.TLSClientCAFile != "" && c.TLSCertFile == "":
		return errors.New("--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked only over HTTPS")
	}
	if len(c.EtcdEndpoints) > 0 {
		if f := c.embeddedMemberFlag(); f != "" {
			return fmt.Errorf("%s configures the embedded etcd member, and with --etcd-endpoints there is none (use --etcd-cacert, --etcd-cert and --etcd-key)", f)
		}
		return c.validateEtcdTLS()
	}
	switch {
	case c.EtcdCACertFile != "":
		return errors.New("--etcd-cacert is for --etcd-endpoints; baton reaches its embedded member in-process")
	case c.EtcdCertFile != "" || c.EtcdKeyFile != "":
		return errors.New("--etcd-cert and --etcd-key are for --etcd-endpoints; baton reaches its embedded member in-process")
	case c.PeerClientCertAuth && c.PeerCertFile == "":
		return errors.New("--peer-client-cert-auth needs --peer-cert and --peer-key")
	}
	if err := c.validateClientSocket(); err != nil {
		return err
	}
	return c.validateMemberTLS()
}

// validateClientSocket refuses settings for a client listener that will
// not exist (a mistake to say, not to drop in silence) and a data dir
// too long for the socket that serves in its place.
func (c Config) validateClientSocket() error {
	if c.ServesClientTCP() {
		return nil
	}
	why := "--client-url is empty"
	if c.ClientURL != "" {
		why = "with --auth-file the etcd client port is served only with --client-trusted-ca (etcd's API there knows no baton credential)"
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"--listen-client-url", c.ListenClientURL != ""}, {"--client-cert", c.ClientCertFile != ""}, {"--client-key", c.ClientKeyFile != ""}, {"--client-auto-tls", c.ClientAutoTLS}} {
		if f.set {
			return fmt.Errorf("%s configures a client TCP listener, and there is none: %s; baton member and snapshot save use the socket unix://DATA-DIR/%s", f.name, why, embedetcd.SocketName)
		}
	}
	if p := embedetcd.SocketPath(c.DataDir); len(p) > embedetcd.MaxSocketPath {
		return fmt.Errorf("--data-dir: the etcd client socket %s would be %d bytes, over the %d a unix socket allows: use a shorter --data-dir", p, len(p), embedetcd.MaxSocketPath)
	}
	return nil
}

// validateMemberTLS checks the embedded member's peer and client TLS
// flags against the URLs they serve.
func (c Config) validateMemberTLS() error {
	peerURLs := [][2]string{{"--peer-url", c.PeerURL}, {"--listen-peer-url", c.ListenPeerURL}}
	for _, m := range strings.Split(c.InitialCluster, ",") {
		if name, u, ok := strings.Cut(strings.TrimSpace(m), "="); ok {
			peerURLs = append(peerURLs, [2]string{"--initial-cluster member " + name, u})
		}
	}
	peer := tlsSide{flag: "peer", cert: c.PeerCertFile, key: c.PeerKeyFile, ca: c.PeerTrustedCAFile, auto: c.PeerAutoTLS, urls: peerURLs}
	if err := peer.validate(); err != nil {
		return err
	}
	client := tlsSide{flag: "client", cert: c.ClientCertFile, key: c.ClientKeyFile, ca: c.ClientTrustedCAFile, auto: c.ClientAutoTLS,
		urls: [][2]string{{"--client-url", c.ClientURL}, {"--listen-client-url", c.ListenClientURL}}}
	return client.validate()
}

// AddFlags registers a flag for every knob of c that "baton serve" takes
// from its command line, with c's values as the defaults: each flag
// writes its field directly. A new flag is a field of Config (or of
// lock.Config) and one line here, plus its row in README.md's flag table.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	c.addMemberFlags(fs)
	c.addHTTPFlags(fs)
	c.addTLSFlags(fs)
	c.addLimitFlags(fs)
}

// addMemberFlags registers the flags of the etcd member, embedded or
// external, and of logging and history.
func (c *Config) addMemberFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory of etcd's data (WAL, snapshots)")
	fs.StringVar(&c.Name, "name", c.Name, "this node's etcd member name")
	fs.StringVar(&c.PeerURL, "peer-url", c.PeerURL, "etcd peer URL other members reach this node at (also where it listens, unless --listen-peer-url)")
	fs.StringVar(&c.ClientURL, "client-url", c.ClientURL, "etcd client URL for etcd tools and \"baton member\" (also where it listens, unless --listen-client-url); with --auth-file served only with --client-trusted-ca; empty, or not served: only the socket DATA-DIR/etcd.sock")
	fs.StringVar(&c.ListenPeerURL, "listen-peer-url", c.ListenPeerURL, "where etcd listens for peers, if not at --peer-url (e.g. http://0.0.0.0:2380 in a container)")
	fs.StringVar(&c.ListenClientURL, "listen-client-url", c.ListenClientURL, "where etcd listens for clients, if not at --client-url")
	fs.StringVar(&c.InitialCluster, "initial-cluster", c.InitialCluster, "NAME=PEER-URL,… of every member, to form a cluster (default: this node alone)")
	fs.StringVar(&c.InitialClusterState, "initial-cluster-state", c.InitialClusterState, `"new" to form a cluster, "existing" to join a running one after "baton member add"`)
	fs.Var((*endpointList)(&c.EtcdEndpoints), "etcd-endpoints", "comma-separated client URLs of an existing etcd cluster to use instead of embedding one")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn or error (etcd's own logs stay at warn unless debug)")
	fs.DurationVar(&c.Trail.HistoryRetention, "history-retention", c.Trail.HistoryRetention, "how long audit events are kept (with --history-max-events, whichever bound comes first drops the oldest)")
	fs.IntVar(&c.Trail.HistoryMaxEvents, "history-max-events", c.Trail.HistoryMaxEvents, "how many audit events are kept at most, the oldest dropped first (about 700 bytes of etcd each; at most a half of --etcd-quota-bytes' worth); 0 = that half, up to a million")
	fs.IntVar(&c.StorageFormat, "storage-format", c.StorageFormat, "raise the cluster's storage format to this (2 to 5) as the node starts: only once every node runs a baton that reads it (docs/OPERATIONS.md, \"Restarts and upgrades\"); 0 = keep the cluster's (a cluster this baton began is at 5)")
	fs.Int64Var(&c.BackendQuota, "etcd-quota-bytes", c.BackendQuota, "etcd's backend quota in bytes (8 GiB at most is advised): past it every write gets 507 insufficient_storage until \"baton maintenance recover\"; with --etcd-endpoints, the external cluster's quota; 0 = etcd's default (2 GiB)")
	fs.DurationVar(&c.Trail.CompactionRetention, "etcd-compaction-retention", c.Trail.CompactionRetention, "how much revision history the embedded etcd member keeps: every tenth of this, baton compacts what is older and the audit trail has read (each lock cycle leaves about 2 KB of old revisions until then); at least 30s")
	fs.DurationVar(&c.Trail.TrailHoldBack, "trail-hold-back", c.Trail.TrailHoldBack, "how long the embedded member's compaction waits for an audit trail that does not read on before it compacts anyway, recording the lost revisions as a gap event")
	fs.Float64Var(&c.Trail.TrailHoldBackQuota, "trail-hold-back-quota", c.Trail.TrailHoldBackQuota, "the share of --etcd-quota-bytes in use past which the embedded member's compaction no longer waits for an audit trail that does not read on (above 0, at most 1)")
	fs.BoolVar(&c.ClientJSONGateway, "client-json-gateway", c.ClientJSONGateway, "also serve etcd's HTTP/JSON gateway (/v3/...) on the etcd client URL; off because any web page could POST to it (etcdctl and baton member use gRPC)")
}

// addHTTPFlags registers the flags of the HTTP API.
func (c *Config) addHTTPFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "address of the HTTP API, dashboard and metrics")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a shutdown waits for requests in flight")
	fs.DurationVar(&c.StartTimeout, "start-timeout", c.StartTimeout, "how long the embedded etcd member may wait, as the node starts, for a quorum of the initial cluster; the node then exits. 0 waits as long as it takes (leave the bound to a supervisor's startup probe)")
	fs.BoolVar(&c.AccessLog, "access-log", c.AccessLog, `one "http request" line per request at info level (request ID, route, status, duration, credential ID; never tokens or query strings); --access-log=false to turn off`)
	fs.StringSliceVar(&c.AllowedHosts, "allowed-hosts", c.AllowedHosts, "comma-separated Host names (no port; any port is answered) the HTTP API answers, * for any; others get 421 host_not_allowed; default: localhost, 127.0.0.1 and [::1] when --http-addr is a loopback address (against DNS rebinding), else any")
	fs.StringVar(&c.AuthFile, "auth-file", c.AuthFile, "file of bearer-token credentials, one \"ROLE TOKEN [PREFIX…]\" a line (roles read, write, admin; prefixes scope the token to names under them), or a policy file (.yaml, .yml, .json) with named credentials and rules per prefix; turns authentication on for /v1 and /metrics; re-read on SIGHUP")
}

// addTLSFlags registers the TLS flags: of the HTTP API, of the embedded
// member's peer and client ports, and of the client of --etcd-endpoints.
func (c *Config) addTLSFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.TLSCertFile, "tls-cert", c.TLSCertFile, "PEM certificate (chain) to serve the HTTP API over HTTPS only, TLS 1.2+; reread on SIGHUP")
	fs.StringVar(&c.TLSKeyFile, "tls-key", c.TLSKeyFile, "PEM private key of --tls-cert")
	fs.StringVar(&c.TLSClientCAFile, "tls-client-ca", c.TLSClientCAFile, "PEM CA(s): HTTPS clients must present a certificate signed by one")
	fs.StringVar(&c.PeerCertFile, "peer-cert", c.PeerCertFile, "PEM certificate for TLS between etcd members (server and client use; peer URLs must be https://)")
	fs.StringVar(&c.PeerKeyFile, "peer-key", c.PeerKeyFile, "PEM private key of --peer-cert")
	fs.StringVar(&c.PeerTrustedCAFile, "peer-trusted-ca", c.PeerTrustedCAFile, "PEM CA that signs the members' peer certificates; every peer must then present one")
	fs.BoolVar(&c.PeerClientCertAuth, "peer-client-cert-auth", c.PeerClientCertAuth, "require peers' client certificates: always on with --peer-trusted-ca (etcd's rule); without it, verified against the system's roots")
	fs.BoolVar(&c.PeerAutoTLS, "peer-auto-tls", c.PeerAutoTLS, "encrypt peer traffic with self-signed certificates: no authentication of peers")
	fs.StringVar(&c.ClientCertFile, "client-cert", c.ClientCertFile, "PEM certificate to serve the etcd client URL over TLS (https://)")
	fs.StringVar(&c.ClientKeyFile, "client-key", c.ClientKeyFile, "PEM private key of --client-cert")
	fs.StringVar(&c.ClientTrustedCAFile, "client-trusted-ca", c.ClientTrustedCAFile, "PEM CA: etcd clients must present a certificate signed by it")
	fs.BoolVar(&c.ClientAutoTLS, "client-auto-tls", c.ClientAutoTLS, "serve the etcd client URL with a self-signed certificate (DATA-DIR/fixtures/client/cert.pem)")
	fs.StringVar(&c.EtcdCACertFile, "etcd-cacert", c.EtcdCACertFile, "PEM CA that verifies https:// --etcd-endpoints (in place of the system's roots)")
	fs.StringVar(&c.EtcdCertFile, "etcd-cert", c.EtcdCertFile, "PEM client certificate for --etcd-endpoints")
	fs.StringVar(&c.EtcdKeyFile, "etcd-key", c.EtcdKeyFile, "PEM private key of --etcd-cert")
}

// addLimitFlags registers the rate limits and the caps, the engine's and
// the HTTP server's.
func (c *Config) addLimitFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&c.RateLimit.Rate, "rate-limit", c.RateLimit.Rate, "requests per second each client address may send (IPv6: each /64); over it, 429 rate_limited; 0 = off")
	fs.IntVar(&c.RateLimit.Burst, "rate-burst", c.RateLimit.Burst, "requests a client address may send at once; 0 = one second's worth of --rate-limit")
	fs.Float64Var(&c.CredentialRateLimit.Rate, "credential-rate-limit", c.CredentialRateLimit.Rate, "requests per second each credential may send; 0 = off")
	fs.IntVar(&c.CredentialRateLimit.Burst, "credential-rate-burst", c.CredentialRateLimit.Burst, "requests a credential may send at once; 0 = one second's worth of --credential-rate-limit")
	fs.IntVar(&c.MaxWaitersPerLock, "max-waiters-per-lock", c.MaxWaitersPerLock, "acquires that may queue for one lock; more get 429 too_many_waiters; 0 = no cap")
	fs.IntVar(&c.MaxLocksPerSession, "max-locks-per-session", c.MaxLocksPerSession, "locks one session may hold; more get 409 too_many_locks_in_session; 0 = no cap")
	fs.IntVar(&c.MaxSessions, "max-sessions", c.MaxSessions, "sessions the cluster may hold; more get 429 too_many_sessions; 0 = no cap")
	fs.IntVar(&c.MaxLocks, "max-locks", c.MaxLocks, "locks the cluster may hold; more get 429 too_many_locks; 0 = no cap")
	fs.IntVar(&c.MaxFencedValues, "max-fenced-values", c.MaxFencedValues, "fenced values (resources) the cluster may hold; a write that would make one more gets 429 too_many_fenced_values; 0 = no cap")
	fs.IntVar(&c.MaxFencedValueBytes, "max-fenced-value-bytes", c.MaxFencedValueBytes, "largest fenced value, in bytes of JSON; larger ones get 413 value_too_large")
	fs.IntVar(&c.MaxKeys, "max-keys", c.MaxKeys, "keys (PUT /v1/kv) the cluster may hold; a put that would make one more gets 507 too_many_keys; 0 = no cap")
	fs.IntVar(&c.MaxKeyValueBytes, "max-key-value-bytes", c.MaxKeyValueBytes, "largest value of a key, in bytes of JSON; larger ones get 413 value_too_large")
	fs.IntVar(&c.Trail.MaxEventStreams, "max-event-streams", c.Trail.MaxEventStreams, "event streams (GET /v1/events) this node serves at once; more get 503 too_many_streams; 0 = no cap")
	fs.IntVar(&c.StreamLimits.PerAddress, "max-event-streams-per-address", c.StreamLimits.PerAddress, "event streams one client address (an IPv6 /64) holds open on this node; more get 429 too_many_streams; 0 = no cap")
	fs.IntVar(&c.StreamLimits.PerCredential, "max-event-streams-per-credential", c.StreamLimits.PerCredential, "event streams one credential holds open on this node (with --auth-file); more get 429 too_many_streams; 0 = no cap")
}

// endpointList is --etcd-endpoints: one comma-separated string on the
// command line (and in BATON_ETCD_ENDPOINTS), a list in Config. Empty
// means none, and the node embeds its member.
type endpointList []string

func (l *endpointList) String() string { return strings.Join(*l, ",") }

func (l *endpointList) Type() string { return "string" }

func (l *endpointList) Set(s string) error {
	*l = nil
	if s != "" {
		*l = strings.Split(s, ",")
	}
	return nil
}
