package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// dialMember is lock.Config.DialMember for an embedded member: the
// in-process client reaches only this node's own member, so the
// recovery from a full data store ("baton maintenance recover")
// defragments the other members through their client URLs. Over https
// it presents this member's client certificate (--client-cert), which a
// member started with --client-trusted-ca requires, and verifies theirs
// against --client-trusted-ca (else the system's roots). Every member's
// --client-url must then be reachable from the node that recovers.
func dialMember(info transport.TLSInfo) func(ctx context.Context, urls []string) (*clientv3.Client, error) {
	return func(ctx context.Context, urls []string) (*clientv3.Client, error) {
		var tc *tls.Config
		if info.CertFile != "" || info.TrustedCAFile != "" {
			var err error
			if tc, err = info.ClientConfig(); err != nil {
				return nil, fmt.Errorf("client TLS: %w", err)
			}
		}
		timeout := 5 * time.Second
		if d, ok := ctx.Deadline(); ok {
			timeout = time.Until(d)
		}
		return clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: timeout, TLS: tc, Logger: zap.NewNop()})
	}
}
