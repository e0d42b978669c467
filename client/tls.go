package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig is the TLS for https:// endpoints, from PEM files, like Consul
// api's TLSConfig. The zero value trusts the system's roots and presents no
// client certificate.
type TLSConfig struct {
	// CAFile holds CA certificates to trust in addition to the system's:
	// the CA of a node's own --tls-cert (BATON_CACERT).
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for nodes
	// started with --tls-client-ca (BATON_CERT, BATON_KEY).
	CertFile, KeyFile string
}

func (t TLSConfig) empty() bool { return t == TLSConfig{} }

// SetupTLSConfig reads the files of t into a *tls.Config for an
// http.Transport (TLS 1.2 or later). Its errors name the file at fault.
func SetupTLSConfig(t TLSConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("baton client: CA file: %w", err)
		}
		// In addition to the system's roots, as the field promises; a
		// system without a pool of its own trusts only this file.
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("baton client: CA file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		return nil, errors.New("baton client: a client certificate (BATON_CERT, --cert) needs its key (BATON_KEY, --key)")
	case t.KeyFile != "" && t.CertFile == "":
		return nil, errors.New("baton client: a client key (BATON_KEY, --key) needs its certificate (BATON_CERT, --cert)")
	case t.CertFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("baton client: client certificate %s with key %s: %w", t.CertFile, t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
