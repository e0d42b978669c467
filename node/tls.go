package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/tlsfiles"
	"github.com/baton-dev/baton/trail"
)

// embeddedMemberFlag names a flag of the embedded member (its TLS, its
// client port, its compaction and how long that waits for the trail) that is set, if any.
func (c Config) embeddedMemberFlag() string {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"--peer-cert", c.PeerCertFile != ""}, {"--peer-key", c.PeerKeyFile != ""}, {"--peer-trusted-ca", c.PeerTrustedCAFile != ""},
		{"--peer-client-cert-auth", c.PeerClientCertAuth}, {"--peer-auto-tls", c.PeerAutoTLS},
		{"--client-cert", c.ClientCertFile != ""}, {"--client-key", c.ClientKeyFile != ""}, {"--client-trusted-ca", c.ClientTrustedCAFile != ""},
		{"--client-auto-tls", c.ClientAutoTLS}, {"--client-json-gateway", c.ClientJSONGateway},
		{"--etcd-compaction-retention", c.Trail.CompactionRetention != embedetcd.DefaultCompactionRetention},
		{"--trail-hold-back", c.Trail.TrailHoldBack != trail.DefaultConfig().TrailHoldBack},
		{"--trail-hold-back-quota", c.Trail.TrailHoldBackQuota != trail.DefaultConfig().TrailHoldBackQuota},
	} {
		if f.set {
			return f.name
		}
	}
	return ""
}

func (c Config) validateEtcdTLS() error {
	switch {
	case c.EtcdCertFile != "" && c.EtcdKeyFile == "":
		return errors.New("--etcd-cert needs --etcd-key")
	case c.EtcdKeyFile != "" && c.EtcdCertFile == "":
		return errors.New("--etcd-key needs --etcd-cert")
	}
	if c.EtcdCACertFile == "" && c.EtcdCertFile == "" {
		return nil
	}
	// etcd's client would drop the TLS settings for an http:// endpoint
	// without a word.
	for _, e := range c.EtcdEndpoints {
		if u, err := url.Parse(e); err == nil && u.Scheme == "http" {
			return fmt.Errorf("--etcd-endpoints %q must be https:// with --etcd-cacert or --etcd-cert", e)
		}
	}
	return nil
}

// tlsSide is the TLS flags of one of the embedded member's ports:
// --peer-cert, --peer-key, --peer-trusted-ca, --peer-auto-tls and the
// URLs (flag, value) that must agree with them; likewise for "client".
type tlsSide struct {
	flag          string
	cert, key, ca string
	auto          bool
	urls          [][2]string
}

func (s tlsSide) validate() error {
	f := func(name string) string { return "--" + s.flag + "-" + name }
	switch {
	case s.cert != "" && s.key == "":
		return fmt.Errorf("%s needs %s", f("cert"), f("key"))
	case s.key != "" && s.cert == "":
		return fmt.Errorf("%s needs %s", f("key"), f("cert"))
	case s.ca != "" && s.auto:
		return fmt.Errorf("%s and %s exclude each other: auto TLS trusts no CA", f("trusted-ca"), f("auto-tls"))
	case s.ca != "" && s.cert == "":
		return fmt.Errorf("%s needs %s and %s: a CA alone turns no TLS on", f("trusted-ca"), f("cert"), f("key"))
	case s.cert != "" && s.auto:
		return fmt.Errorf("%s and %s exclude each other: auto TLS makes its own certificate", f("cert"), f("auto-tls"))
	}
	on := s.cert != "" || s.auto
	for _, fu := range s.urls {
		u, err := url.Parse(fu[1])
		if fu[1] == "" || err != nil {
			continue // embedetcd says what is wrong with it
		}
		switch {
		case on && u.Scheme != "https":
			how := f("cert")
			if s.auto {
				how = f("auto-tls")
			}
			return fmt.Errorf("%s %q must be https:// with %s", fu[0], fu[1], how)
		case !on && u.Scheme == "https":
			return fmt.Errorf("%s %q is https:// but %s TLS is off: give %s and %s (or %s)", fu[0], fu[1], s.flag, f("cert"), f("key"), f("auto-tls"))
		}
	}
	return nil
}

// httpTLS reads the API's certificate, key and client CA: nil, nil
// without --tls-cert. Plain HTTP on the same port is not served: Go's
// server answers it "400 Client sent an HTTP request to an HTTPS server".
func (c Config) httpTLS() (*tlsfiles.KeyPair, *tls.Config, error) {
	if c.TLSCertFile == "" {
		return nil, nil, nil
	}
	kp, err := tlsfiles.NewKeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	tc := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: kp.GetCertificate,
		// The listener is wrapped by hand, so ALPN is ours to offer;
		// net/http speaks HTTP/2 on the connections that pick "h2".
		NextProtos: []string{"h2", "http/1.1"},
	}
	if c.TLSClientCAFile != "" {
		pool, err := tlsfiles.LoadCAPool(c.TLSClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return kp, tc, nil
}

// memberTLS is the embedded member's TLS, its files checked so that a bad
// one fails the start naming its flag and file.
func (c Config) memberTLS() (peer, client transport.TLSInfo, err error) {
	peer = transport.TLSInfo{CertFile: c.PeerCertFile, KeyFile: c.PeerKeyFile, TrustedCAFile: c.PeerTrustedCAFile,
		// etcd requires client certificates whenever there is a CA; saying
		// so here keeps its logs and our docs in agreement.
		ClientCertAuth: c.PeerClientCertAuth || c.PeerTrustedCAFile != ""}
	client = transport.TLSInfo{CertFile: c.ClientCertFile, KeyFile: c.ClientKeyFile, TrustedCAFile: c.ClientTrustedCAFile,
		ClientCertAuth: c.ClientTrustedCAFile != ""}
	if err := checkFiles("peer", peer); err != nil {
		return peer, client, err
	}
	return peer, client, checkFiles("client", client)
}

// etcdClientTLS is the TLS for --etcd-endpoints: nil without any TLS
// flag (etcd's client then uses the system's roots for https://).
func (c Config) etcdClientTLS() (*tls.Config, error) {
	if c.EtcdCACertFile == "" && c.EtcdCertFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: c.EtcdCertFile, KeyFile: c.EtcdKeyFile, TrustedCAFile: c.EtcdCACertFile}
	if err := checkFiles("etcd", info); err != nil {
		return nil, err
	}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return tc, nil
}

// checkFiles reads the files of info; prefix is the flags' ("peer" for
// --peer-cert and so on; "etcd" has --etcd-cacert for its CA).
func checkFiles(prefix string, info transport.TLSInfo) error {
	if info.CertFile != "" {
		if _, err := tlsfiles.LoadKeyPair(info.CertFile, info.KeyFile); err != nil {
			return fmt.Errorf("--%s-cert/--%s-key: %w", prefix, prefix, err)
		}
	}
	if info.TrustedCAFile != "" {
		if _, err := tlsfiles.LoadCAPool(info.TrustedCAFile); err != nil {
			ca := "--" + prefix + "-trusted-ca"
			if prefix == "etcd" {
				ca = "--etcd-cacert"
			}
			return fmt.Errorf("%s: %w", ca, err)
		}
	}
	return nil
}
