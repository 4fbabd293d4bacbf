package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"KEY": "sk-1", "EMPTY": "", "_X9": "x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ in, want, err string }{
		{"Bearer ${KEY}", "Bearer sk-1", ""},
		{"${KEY}${_X9}", "sk-1x", ""},
		{"${EMPTY}", "", ""}, // set but empty is the user's choice
		{"no reference", "no reference", ""},
		{"cost $5 and $KEY", "cost $5 and $KEY", ""}, // only ${NAME} is a reference
		{"Bearer ${MISSING}", "", "environment variable MISSING is not set"},
		{"Bearer ${KEY", "", "opens ${ without a closing }"},
		{"${}", "", "${} is not an environment variable name"},
		{"${9KEY}", "", "${9KEY} is not an environment variable name"},
		{"${A-B}", "", "${A-B} is not an environment variable name"},
	} {
		got, err := expandEnv(tc.in, lookup)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("expandEnv(%q) error %v; want %q", tc.in, err, tc.err)
		}
	}
}

func TestParseConfigHeadersFromEnv(t *testing.T) {
	t.Setenv("LEVEE_TEST_NODE_KEY", "sk-node")
	const base = "upstream:\n  nodes: [\"http://127.0.0.1:9\"]\n  headers:\n"
	cfg, err := ParseConfig([]byte(base + "    Authorization: \"Bearer ${LEVEE_TEST_NODE_KEY}\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Upstream.Headers["Authorization"]; got != "Bearer sk-node" {
		t.Errorf("Authorization = %q", got)
	}
	for _, tc := range []struct{ yaml, msg string }{
		{"    Authorization: \"Bearer ${LEVEE_TEST_UNSET_KEY}\"\n", "4: upstream.headers.Authorization: environment variable LEVEE_TEST_UNSET_KEY is not set"},
		{"    Content-Type: text/plain\n", "4: upstream.headers.Content-Type: the gateway sets Content-Type itself"},
	} {
		_, err := ParseConfig([]byte(base + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v; want %q", tc.yaml, err, tc.msg)
		}
	}
}

// TestUpstreamHeadersThroughTheGateway: a backend that wants an API key
// serves through a gateway configured with it; the clients' keys never
// reach it. Without the header every call is the backend's 401, which
// refuses the gateway's key, not the client's: answered as an upstream
// error (502, the fallback off), never relayed (TestCredentialRefusal).
func TestUpstreamHeadersThroughTheGateway(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer sk-node" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"invalid api key"}}`))
			return
		}
		if r.URL.Path == wire.PathHealthz {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer backend.Close()
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		outcome wire.Outcome
	}{
		{"with the key", map[string]string{"Authorization": "Bearer sk-node"}, http.StatusOK, wire.OutcomeOK},
		{"without", nil, http.StatusBadGateway, wire.OutcomeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			auths = nil
			mu.Unlock()
			cfg := testConfig(backend.URL)
			cfg.Upstream.Headers = tc.headers
			cfg.Defenses.Fallback = false
			s := startServer(t, cfg)
			for _, key := range []string{"k0", "k1", "k2"} {
				a := call(t, http.MethodPost, "http://"+s.Addr()+wire.PathChat, key, body)
				if a.status != tc.status || a.outcome != tc.outcome.String() {
					t.Fatalf("%s: %s; want %d %s", key, a, tc.status, tc.outcome)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auths) == 0 {
				t.Fatal("the backend saw no request")
			}
			for _, a := range auths {
				if a != tc.headers["Authorization"] {
					t.Errorf("backend saw Authorization %q; want %q", a, tc.headers["Authorization"])
				}
			}
		})
	}
}
