package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CA is a certificate authority that lives as long as the test.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// File is the CA certificate in PEM, for --tls-client-ca, --cacert,
	// --peer-trusted-ca and the like.
	File string
	dir  string
}

// Pair is a signed certificate and its key, in PEM files.
type Pair struct {
	CertFile, KeyFile string
	Cert              *x509.Certificate
}

// TLS returns the pair loaded for a tls.Config.
func (p Pair) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CopyTo writes the pair over certFile and keyFile, as a certificate
// renewal does in place, for tests of a reload.
func (p Pair) CopyTo(t testing.TB, certFile, keyFile string) {
	t.Helper()
	for from, to := range map[string]string{p.CertFile: certFile, p.KeyFile: keyFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// NewCA makes a self-signed CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testcerts: create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &CA{Cert: cert, Key: key, File: filepath.Join(dir, "ca.pem"), dir: dir}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Pool is a cert pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a certificate for hosts (IP addresses or DNS names) that
// serves and also works as a client certificate: etcd members use one
// certificate both ways, to accept peers and to dial them.
func (ca *CA) Server(t testing.TB, name string, hosts ...string) Pair {
	t.Helper()
	tmpl := ca.template(t, name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(t, name, tmpl)
}

// Client issues a certificate usable only to authenticate a client.
func (ca *CA) Client(t testing.TB, name string) Pair {
	t.Helper()
	return ca.issue(t, name, ca.template(t, name, x509.ExtKeyUsageClientAuth))
}

// ClientNamed issues a client certificate with CommonName name and the
// subject alternative names sans: each a URI when it has "://", an email
// address when it has "@", else a DNS name.
func (ca *CA) ClientNamed(t testing.TB, name string, sans ...string) Pair {
	t.Helper()
	tmpl := ca.template(t, name, x509.ExtKeyUsageClientAuth)
	for _, s := range sans {
		switch {
		case strings.Contains(s, "://"):
			u, err := url.Parse(s)
			if err != nil {
				t.Fatalf("testcerts: URI %q: %v", s, err)
			}
			tmpl.URIs = append(tmpl.URIs, u)
		case strings.Contains(s, "@"):
			tmpl.EmailAddresses = append(tmpl.EmailAddresses, s)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	return ca.issue(t, name, tmpl)
}

func (ca *CA) template(t testing.TB, name string, usage ...x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
}

func (ca *CA) issue(t testing.TB, name string, tmpl *x509.Certificate) Pair {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatalf("testcerts: issue %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Each pair in a directory of its own, so a name may be issued twice
	// (a renewed certificate) without overwriting the first.
	dir, err := os.MkdirTemp(ca.dir, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), Cert: cert}
	writePEM(t, p.CertFile, "CERTIFICATE", der)
	writePEM(t, p.KeyFile, "PRIVATE KEY", keyDER)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcerts: generate key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("testcerts: write %s: %v", path, err)
	}
}
