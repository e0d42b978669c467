package tlsfiles_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/internal/tlsfiles"
)

func TestLoadKeyPair_ErrorsNameTheFileAtFault(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	a, b := ca.Server(t, "a", "127.0.0.1"), ca.Server(t, "b", "127.0.0.1")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN NOTHING-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what, cert, key string
		want            []string
	}{
		{"a missing certificate", missing, a.KeyFile, []string{missing}},
		{"a missing key", a.CertFile, missing, []string{missing}},
		{"a certificate file without a certificate", garbage, a.KeyFile, []string{garbage, "no PEM certificate"}},
		{"a key file without a key", a.CertFile, garbage, []string{garbage, "no PEM private key"}},
		{"a key of another certificate", a.CertFile, b.KeyFile, []string{a.CertFile, b.KeyFile}},
		{"the key where the certificate goes", a.KeyFile, a.KeyFile, []string{a.KeyFile, "no PEM certificate"}},
	} {
		_, err := tlsfiles.LoadKeyPair(tc.cert, tc.key)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error with %q", tc.what, err, w)
			}
		}
	}
	if _, err := tlsfiles.LoadKeyPair(a.CertFile, a.KeyFile); err != nil {
		t.Errorf("a good pair: %v", err)
	}
	if _, err := tlsfiles.LoadCAPool(garbage); err == nil || !strings.Contains(err.Error(), garbage) {
		t.Errorf("a CA file without a certificate: %v", err)
	}
	if err := tlsfiles.Check("", "", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Check of a missing CA: %v", err)
	}
	if err := tlsfiles.Check("", "", ""); err != nil {
		t.Errorf("Check of nothing: %v", err)
	}
}

func TestKeyPair_ReloadSwapsThePairAndKeepsItOnError(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	first, second := ca.Server(t, "a", "127.0.0.1"), ca.Server(t, "a", "127.0.0.1")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first.CopyTo(t, certFile, keyFile)
	kp, err := tlsfiles.NewKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		c, _ := kp.GetCertificate(nil)
		return c.Leaf.SerialNumber.String()
	}
	if serial() != first.Cert.SerialNumber.String() {
		t.Fatal("not serving the first pair")
	}
	second.CopyTo(t, certFile, keyFile)
	if err := kp.Reload(); err != nil {
		t.Fatal(err)
	}
	if serial() != second.Cert.SerialNumber.String() || kp.Leaf().SerialNumber.Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatal("reload did not swap the pair")
	}
	if err := os.WriteFile(keyFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := kp.Reload(); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Fatalf("reload of an empty key: %v", err)
	}
	if serial() != second.Cert.SerialNumber.String() {
		t.Fatal("a failed reload dropped the pair in use")
	}
}
