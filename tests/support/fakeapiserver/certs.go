package main

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
	"os"
	"path/filepath"
	"time"
)

// certBundle is what the fake generates at start: a serving CA and serving
// certificate for 127.0.0.1/localhost, one for the name expired.localhost
// that expired an hour ago (a client that asks for that name, by SNI, gets
// it), and a client CA with one client pair.
type certBundle struct {
	serving   tls.Certificate
	expired   tls.Certificate
	clientCAs *x509.CertPool
}

type keyPair struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	keyPEM  []byte
}

func newKeyPair(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	return newKeyPairValid(tmpl, parent, time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour))
}

func newKeyPairValid(tmpl *x509.Certificate, parent *keyPair, notBefore, notAfter time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = notBefore
	tmpl.NotAfter = notAfter
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}, nil
}

func caTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign}
}

// generateCerts creates the certificates and writes into dir:
// ca.crt (serving CA), server.crt/server.key, client-ca.crt, client.crt and
// client.key (CN = clientUser).
func generateCerts(dir, clientUser string) (*certBundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := newKeyPair(caTemplate("fakeapiserver-ca"), nil)
	if err != nil {
		return nil, err
	}
	server, err := newKeyPair(&x509.Certificate{Subject: pkix.Name{CommonName: "fakeapiserver"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca)
	if err != nil {
		return nil, err
	}
	expired, err := newKeyPairValid(&x509.Certificate{Subject: pkix.Name{CommonName: "fakeapiserver-expired"},
		DNSNames:    []string{"expired.localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca,
		time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	if err != nil {
		return nil, err
	}
	clientCA, err := newKeyPair(caTemplate("fakeapiserver-client-ca"), nil)
	if err != nil {
		return nil, err
	}
	client, err := newKeyPair(&x509.Certificate{Subject: pkix.Name{CommonName: clientUser},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, clientCA)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"ca.crt", ca.certPEM, 0o644},
		{"server.crt", append(append([]byte{}, server.certPEM...), ca.certPEM...), 0o644},
		{"server.key", server.keyPEM, 0o600},
		{"client-ca.crt", clientCA.certPEM, 0o644},
		{"client.crt", client.certPEM, 0o644},
		{"client.key", client.keyPEM, 0o600},
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	return &certBundle{
		serving:   tls.Certificate{Certificate: [][]byte{server.cert.Raw, ca.cert.Raw}, PrivateKey: server.key, Leaf: server.cert},
		expired:   tls.Certificate{Certificate: [][]byte{expired.cert.Raw, ca.cert.Raw}, PrivateKey: expired.key, Leaf: expired.cert},
		clientCAs: pool,
	}, nil
}

// writeFileAtomic writes to a temporary name in the same directory and
// renames, so a reader never sees a partial file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
