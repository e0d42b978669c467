// Package tlsfiles reads TLS certificates, keys and CA bundles from PEM
// files with errors that name the file at fault, and holds a server
// certificate that can be swapped while connections are served (reload on
// SIGHUP).
//
//	kp, err := tlsfiles.NewKeyPair("cert.pem", "key.pem")
//	if err != nil { ... } // names the file: unreadable, not PEM, or key and cert do not match
//	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.GetCertificate}
//	...
//	err = kp.Reload() // on SIGHUP; on error the old pair stays in use
package tlsfiles
