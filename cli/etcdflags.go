package cli

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/tlsfiles"
)

// etcdFlags are how the commands that talk to etcd's client port directly
// ("member", "snapshot save") reach it: they work when no baton answers,
// so they cannot go through the HTTP API.
type etcdFlags struct {
	endpoints string
	tls       transport.TLSInfo
}

func (f *etcdFlags) add(fs *pflag.FlagSet, endpointsUsage string) {
	fs.StringVar(&f.endpoints, "etcd-endpoints", "", endpointsUsage)
	fs.StringVar(&f.tls.TrustedCAFile, "etcd-cacert", "", "PEM CA that verifies https:// etcd endpoints, in place of the system's roots (env BATON_ETCD_CACERT)")
	fs.StringVar(&f.tls.CertFile, "etcd-cert", "", "PEM client certificate, for a member started with --client-trusted-ca (env BATON_ETCD_CERT)")
	fs.StringVar(&f.tls.KeyFile, "etcd-key", "", "PEM private key of --etcd-cert (env BATON_ETCD_KEY)")
}

// resolve fills what the flags left empty from the environment and the
// default client URL, and refuses combinations that cannot work.
func (f *etcdFlags) resolve() error {
	for _, v := range []struct {
		p   *string
		env string
	}{{&f.endpoints, "BATON_ETCD_ENDPOINTS"}, {&f.tls.TrustedCAFile, "BATON_ETCD_CACERT"}, {&f.tls.CertFile, "BATON_ETCD_CERT"}, {&f.tls.KeyFile, "BATON_ETCD_KEY"}} {
		if *v.p == "" {
			*v.p = os.Getenv(v.env)
		}
	}
	if f.endpoints == "" {
		f.endpoints = defaultEndpoint()
	}
	if (f.tls.CertFile == "") != (f.tls.KeyFile == "") {
		return usagef("--etcd-cert and --etcd-key go together")
	}
	if f.tls.TrustedCAFile != "" || f.tls.CertFile != "" {
		// etcd's client would drop TLS for an http:// endpoint silently.
		for _, e := range f.list() {
			if strings.HasPrefix(e, "http://") {
				return usagef("--etcd-endpoints %q must be https:// with --etcd-cacert or --etcd-cert", e)
			}
		}
	}
	return nil
}

// defaultEndpoint is the local node's socket when it serves one (a node
// with --auth-file and no --client-trusted-ca, or an empty --client-url,
// has no client TCP port), found in its data dir: BATON_DATA_DIR, as the
// node reads it, else the node's default. Otherwise it is a node's
// default --client-url.
func defaultEndpoint() string {
	dir := os.Getenv("BATON_DATA_DIR")
	if dir == "" {
		dir = embedetcd.NewConfig().Dir
	}
	if fi, err := os.Stat(embedetcd.SocketPath(dir)); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return embedetcd.SocketURL(dir)
	}
	return embedetcd.NewConfig().ClientURL
}

func (f *etcdFlags) list() []string {
	var out []string
	for _, e := range strings.Split(f.endpoints, ",") {
		out = append(out, strings.TrimSpace(e))
	}
	return out
}

// tlsConfig is the TLS for etcd's client port: nil without a CA or a
// certificate (etcd's client then uses the system's roots for https://).
// A bad file is named.
func (f *etcdFlags) tlsConfig() (*tls.Config, error) {
	if f.tls.TrustedCAFile == "" && f.tls.CertFile == "" {
		return nil, nil
	}
	if err := tlsfiles.Check(f.tls.CertFile, f.tls.KeyFile, f.tls.TrustedCAFile); err != nil {
		return nil, fmt.Errorf("etcd TLS: %w", err)
	}
	return f.tls.ClientConfig()
}
