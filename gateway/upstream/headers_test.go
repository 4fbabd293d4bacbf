package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConfigHeaders(t *testing.T) {
	nodes := []string{"http://127.0.0.1:9"}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		err     string // "" = valid
	}{
		{"none", nil, ""},
		{"api key", map[string]string{"Authorization": "Bearer sk-1"}, ""},
		{"azure and routing", map[string]string{"api-key": "k", "X-Route": "a\tb"}, ""},
		{"space in name", map[string]string{"Api Key": "k"}, `upstream.headers.Api Key: "Api Key" is not a valid HTTP header name`},
		{"empty name", map[string]string{"": "k"}, "not a valid HTTP header name"},
		{"content type", map[string]string{"content-type": "text/plain"}, "upstream.headers.content-type: the gateway sets Content-Type itself"},
		{"host", map[string]string{"Host": "example.com"}, "the gateway sets Host itself"},
		{"deadline", map[string]string{DeadlineHeader: "5"}, "the gateway sets " + DeadlineHeader + " itself"},
		{"hop by hop", map[string]string{"Connection": "close"}, "the gateway sets Connection itself"},
		{"case duplicate", map[string]string{"Authorization": "a", "authorization": "b"}, `upstream.headers.authorization: duplicates "Authorization"`},
		{"header splitting", map[string]string{"X-Key": "k\r\nX-Evil: 1"}, "upstream.headers.X-Key: value has a control character at byte 1"},
		{"nul", map[string]string{"X-Key": "k\x00"}, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Nodes: nodes, Headers: tc.headers}.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.err != "" && err == nil:
				t.Fatalf("accepted; want an error containing %q", tc.err)
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Fatalf("error %q; want it to contain %q", err, tc.err)
			}
		})
	}
}

// TestHeadersReachTheNode: the configured headers go with every model
// call and every health check, over the caller's, and a node that wants
// them stays up.
func TestHeadersReachTheNode(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // path → Authorization values seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer sk-node" || r.Header.Get("X-Tenant-Route") != "eu" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	p, err := New(Config{
		Nodes:          []string{srv.URL},
		HealthInterval: 10 * time.Millisecond,
		Headers:        map[string]string{"authorization": "Bearer sk-node", "x-tenant-route": "eu"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	defer p.Close()
	for i := range 5 {
		resp, err := p.Send(ctx, Call{
			Method: http.MethodPost, Path: "/v1/chat/completions", Body: []byte(`{}`),
			Header: http.Header{"Authorization": {"Bearer client-key"}, "Content-Type": {"application/json"}},
		})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		checks := len(seen[DefaultHealthPath])
		mu.Unlock()
		if checks >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen[DefaultHealthPath]) < 3 {
		t.Fatalf("only %d health checks in 10 s", len(seen[DefaultHealthPath]))
	}
	for path, auths := range seen {
		for _, a := range auths {
			if a != "Bearer sk-node" {
				t.Errorf("%s got Authorization %q", path, a)
			}
		}
	}
	if st := p.Stats(); !st[0].Up {
		t.Errorf("node that wants the headers marked down: %+v", st[0])
	}
}
