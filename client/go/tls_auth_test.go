package runjournal_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
	"runjournal.dev/client/go/internal/testserver"
)

func selfSigned(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "runjournal-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = os.WriteFile(certPath, certPEM, 0o600)
	_ = os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certPath, keyPath, pool
}

// TLS, a bearer token, and the auth refusals as typed errors.
func TestTLSAndToken(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath, pool := selfSigned(t, dir)
	tokens := filepath.Join(dir, "tokens.toml")
	workerToken := "worker-token-123"
	body := fmt.Sprintf("[[tokens]]\nname = \"worker\"\nsha256 = \"%s\"\nrun_id_prefixes = [\"\"]\nscopes = [\"worker\"]\n", rj.SystemPromptSHA256(workerToken))
	if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testserver.Start(t, "--tls-cert", certPath, "--tls-key", keyPath, "--auth-tokens-file", tokens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}

	c, err := rj.Dial(addr, rj.WithTLS(tlsCfg), rj.WithToken(workerToken), rj.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := fmt.Sprintf("go-tls-%d", time.Now().UnixNano())
	run, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("hi")}, rj.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Note(ctx, "progress", map[string]any{"step": 1}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Approve(ctx, id, "nope", pb.Decision_DECISION_APPROVED, "", "")
	var denied *rj.PermissionDeniedError
	if !errors.As(err, &denied) || denied.Scope != "operator" || denied.Principal != "worker" {
		t.Fatalf("approve with a worker token: %v", err)
	}

	anon, err := rj.Dial(addr, rj.WithTLS(tlsCfg), rj.WithRetry(rj.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	_, err = anon.Fold(ctx, id, 0)
	var unauth *rj.UnauthenticatedError
	if !errors.As(err, &unauth) {
		t.Fatalf("no token: %v", err)
	}

	plain, err := rj.Dial(addr, rj.WithToken(workerToken), rj.WithRetry(rj.NoRetry), rj.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Fold(ctx, id, 0); !rj.Retryable(err) {
		t.Fatalf("plaintext to a TLS server: %v", err)
	}
}
