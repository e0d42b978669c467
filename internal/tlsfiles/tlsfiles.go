package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// LoadKeyPair reads a certificate (chain) and its private key. Its error
// names the file at fault: unreadable, holding no PEM block of the right
// kind, or a key that does not belong to the certificate.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key: %w", err)
	}
	if !hasBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return tls.Certificate{}, fmt.Errorf("certificate %s holds no PEM certificate", certFile)
	}
	if !hasBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return tls.Certificate{}, fmt.Errorf("key %s holds no PEM private key", keyFile)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return c, nil
}

func hasBlock(data []byte, ok func(typ string) bool) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if ok(b.Type) {
			return true
		}
	}
}

// LoadCAPool reads the PEM certificates of file into a new pool. A file
// without any certificate is an error: trusting nothing is never meant.
func LoadCAPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA certificate %s holds no PEM certificate", file)
	}
	return p, nil
}

// Check reads what is given of a certificate, its key and a CA bundle, so
// that a bad file fails a start with its name instead of every handshake
// later. Empty names are skipped.
func Check(certFile, keyFile, caFile string) error {
	if certFile != "" || keyFile != "" {
		if _, err := LoadKeyPair(certFile, keyFile); err != nil {
			return err
		}
	}
	if caFile != "" {
		if _, err := LoadCAPool(caFile); err != nil {
			return err
		}
	}
	return nil
}

// KeyPair is a server certificate read from files, swapped atomically by
// Reload: handshakes in progress keep the pair they started with, later
// ones get the new one. It is safe for concurrent use.
type KeyPair struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// NewKeyPair reads the pair once; see LoadKeyPair for its errors.
func NewKeyPair(certFile, keyFile string) (*KeyPair, error) {
	k := &KeyPair{certFile: certFile, keyFile: keyFile}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the files again. On error the pair in use stays.
func (k *KeyPair) Reload() error {
	c, err := LoadKeyPair(k.certFile, k.keyFile)
	if err != nil {
		return err
	}
	k.cur.Store(&c)
	return nil
}

// GetCertificate is for tls.Config.GetCertificate.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.cur.Load(), nil
}

// Leaf is the certificate in use (the first of its chain).
func (k *KeyPair) Leaf() *x509.Certificate { return k.cur.Load().Leaf }

// CertFile is the certificate's file name, for logs.
func (k *KeyPair) CertFile() string { return k.certFile }
