package ratelimit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// A URL of the wrong protocol fails Open, saying which one the server
// speaks: rediss:// at a plain port (the TLS handshake is never answered;
// the warm-up only timed out) and redis:// at a TLS port (the server
// closes the connection; the warm-up read EOF). Neither passes by
// waiting. A certificate the gateway does not trust fails Open too;
// ?skip_verify=true works. A plain server that is merely paused is not
// taken for a mismatch: Open succeeds with the breaker open.
func TestOpenRedisTLSMismatch(t *testing.T) {
	plain, tlsPort := startTLSRedis(t)
	open := func(url string) (*Failover, func(), error) {
		st, closer, err := Open(StoreConfig{Kind: "redis", URL: url, TimeoutMs: 1000})
		if err != nil {
			return nil, nil, err
		}
		return st.(*Failover), func() { closer.Close() }, nil
	}
	for _, tc := range []struct{ name, url, want string }{
		{"rediss at a plain port", "rediss://" + plain, "speaks plain Redis, and the URL asks for TLS: use redis://"},
		{"redis at a TLS port", "redis://" + tlsPort, "speaks TLS, and the URL asks for plain Redis: use rediss://"},
		{"untrusted certificate", "rediss://" + tlsPort, "TLS certificate this gateway does not trust"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, closeIt, err := open(tc.url)
			if err == nil {
				closeIt()
				t.Fatalf("Open(%s) succeeded (breaker %v), want an error: %s", tc.url, f.State(), tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "store field url") {
				t.Fatalf("Open(%s): %q, want the field and %q", tc.url, msg, tc.want)
			}
		})
	}
	t.Run("TLS without verification", func(t *testing.T) {
		f, closeIt, err := open("rediss://" + tlsPort + "?skip_verify=true")
		if err != nil {
			t.Fatal(err)
		}
		defer closeIt()
		d, err := f.Allow(context.Background(), "k", Rule{Algorithm: SlidingWindow, Limit: 2, Window: time.Minute}, 1, time.Now())
		if err != nil || !d.Allowed || f.RemoteDecisions() != 1 {
			t.Fatalf("%+v %v remote %d, want a decision by Redis over TLS", d, err, f.RemoteDecisions())
		}
	})
	t.Run("rediss at a paused plain server", func(t *testing.T) {
		srv := redistest.Start(t)
		srv.Pause()
		defer srv.Resume()
		f, closeIt, err := open("rediss://" + srv.Addr())
		if err != nil {
			t.Fatalf("Open at a paused server: %v, want success with the breaker open (it may come back)", err)
		}
		defer closeIt()
		if f.State() != BreakerOpen {
			t.Fatalf("breaker %v, want open", f.State())
		}
	})
}

// startTLSRedis runs redis-server on two free loopback ports, one plain
// and one TLS (a fresh self-signed certificate), and returns their
// addresses. The server is killed when the test ends.
func startTLSRedis(t *testing.T) (plain, tlsAddr string) {
	t.Helper()
	redistest.Need(t)
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	plain, tlsAddr = freeLoopbackAddr(t), freeLoopbackAddr(t)
	port := func(a string) string { _, p, _ := net.SplitHostPort(a); return p }
	logPath := filepath.Join(dir, "redis.log")
	cmd := exec.Command(redistest.Binary, "--bind", "127.0.0.1", "--port", port(plain), "--tls-port", port(tlsAddr),
		"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert, "--tls-auth-clients", "no",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(logPath)
			t.Fatalf("redis-server with TLS exited (%v); is it built with TLS? log:\n%s", err, b)
		default:
		}
		if redistest.Ping(plain, time.Second) == nil {
			return plain, tlsAddr
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server with TLS does not answer PING within 20 s")
		}
	}
}

// freeLoopbackAddr is a loopback address no one listened on a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key as PEM files in dir.
func writeSelfSigned(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "levee test redis"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, block := range map[string]*pem.Block{certPath: {Type: "CERTIFICATE", Bytes: der}, keyPath: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certPath, keyPath
}
