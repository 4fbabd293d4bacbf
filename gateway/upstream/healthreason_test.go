package upstream

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/syncbuf"
)

// TestHealthSaysWhy: a node taken down by its health checks is logged
// with the reason, and /admin/state's node carries it until a check
// passes. An operator in front of a real backend meets these first: vLLM
// serves /health, not the default /healthz (404); a backend that wants a
// key answers 401; an https node with a self-signed certificate fails
// the handshake. Before, the log said only "up=false".
func TestHealthSaysWhy(t *testing.T) {
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(vllm.Close)
	keyed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(keyed.Close)
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses are the point
	selfSigned.StartTLS()
	t.Cleanup(selfSigned.Close)

	cases := []struct {
		name, node string
		want       []string
	}{
		{"wrong health path", vllm.URL, []string{"GET /healthz answered 404 Not Found", "upstream.health_path", "vLLM /health"}},
		{"missing key", keyed.URL, []string{"GET /healthz answered 401 Unauthorized", "upstream.headers"}},
		{"self-signed", selfSigned.URL, []string{"GET /healthz: ", "certificate", "SSL_CERT_FILE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			cfg := Config{Nodes: []string{c.node}, UnhealthyThreshold: 2}
			// The transport the gateway uses (system roots, so the test
			// server's certificate is unknown), not the test server's client.
			p := newPool(t, cfg, WithTransport(NewTransport(cfg)),
				WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			for range 2 {
				p.checkAll(context.Background())
			}
			st := p.Stats()[0]
			if st.Up {
				t.Fatalf("node up after two failed checks: %+v", st)
			}
			line := ""
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "upstream health") {
					line = l
				}
			}
			t.Log(line)
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("log line %q lacks %q", line, w)
				}
				if !strings.Contains(st.HealthError, w) {
					t.Errorf("health_error %q lacks %q", st.HealthError, w)
				}
			}
		})
	}

	t.Run("cleared by a good check", func(t *testing.T) {
		p := newPool(t, Config{Nodes: []string{vllm.URL}, UnhealthyThreshold: 1})
		p.checkAll(context.Background())
		if p.Stats()[0].HealthError == "" {
			t.Fatal("no health_error after a failed check")
		}
		p.cfg.HealthPath = "/health"
		p.checkAll(context.Background())
		if st := p.Stats()[0]; !st.Up || st.HealthError != "" {
			t.Fatalf("after a good check: %+v", st)
		}
	})
}
