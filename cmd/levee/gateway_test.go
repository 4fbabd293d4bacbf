package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGatewayBadAddressFlags: a --listen or --admin that is not host:port
// with a port from 0 to 65535 is a usage error (exit 2) naming the flag,
// found before anything starts: no admin token is made, nothing listens.
// (--admin bogus read "admin: "bogus" is not a loopback address; set
// admin_allow_remote", --listen bogus "gateway: listen: listen tcp: …",
// both exit 1 after the token line.)
func TestGatewayBadAddressFlags(t *testing.T) {
	t.Setenv("LEVEE_ADMIN_TOKEN", "")
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	conf := "listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\nupstream:\n  nodes: [\"http://127.0.0.1:9\"]\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "bogus"}, `levee gateway: --listen "bogus": want host:port`},
		{[]string{"--admin", "bogus"}, `levee gateway: --admin "bogus": want host:port`},
		{[]string{"--listen", "127.0.0.1:99999"}, `levee gateway: --listen "127.0.0.1:99999": want a port from 0 to 65535`},
		{[]string{"--admin", "127.0.0.1:http"}, `levee gateway: --admin "127.0.0.1:http": want a port from 0 to 65535`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- runGateway(append([]string{"--config", cfg}, tt.args...), &stdout, &stderr) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("still running after 10 s: the gateway started")
			}
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", code, stderr.String(), tt.want)
			}
			if strings.Contains(stderr.String(), "admin token") || stdout.Len() > 0 {
				t.Errorf("started something before failing: stdout %q, stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}
