// Package testcerts makes throwaway certificate authorities and the
// certificates they sign, as PEM files in t.TempDir(), for tests of TLS
// serving, client-certificate auth and etcd's peer TLS.
//
//	ca := testcerts.NewCA(t, "test CA")
//	srv := ca.Server(t, "node1", "127.0.0.1", "localhost")
//	cli := ca.Client(t, "ops")
//	worker := ca.ClientNamed(t, "worker-3", "spiffe://example.org/payments") // SANs too
//	// ca.File, srv.CertFile, srv.KeyFile, cli.CertFile, cli.KeyFile
//
// Keys are ECDSA P-256: quick to make, even under -race.
package testcerts
