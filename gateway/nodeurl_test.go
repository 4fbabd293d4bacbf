package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestNormalizeNode: a node is host:port or an http(s) base URL, with a
// path prefix if the backend serves the API under one; what would call
// the wrong path or show a password is refused, saying what to write.
func TestNormalizeNode(t *testing.T) {
	ok := map[string]string{
		"127.0.0.1:9001":                   "http://127.0.0.1:9001",
		"http://127.0.0.1:9001/":           "http://127.0.0.1:9001",
		"http://vllm.internal":             "http://vllm.internal",
		"http://127.0.0.1:9001/openai":     "http://127.0.0.1:9001/openai",
		"https://api.groq.com/openai/":     "https://api.groq.com/openai",
		"https://api.openai.com":           "https://api.openai.com",
		"http://[::1]:8000":                "http://[::1]:8000",
		" http://127.0.0.1:9001/prefix// ": "http://127.0.0.1:9001/prefix",
	}
	for in, want := range ok {
		got, err := NormalizeNode(in)
		if err != nil || got != want {
			t.Errorf("NormalizeNode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"https://api.openai.com/v1":     `give "https://api.openai.com"`,
		"http://127.0.0.1:8000/v1/":     `give "http://127.0.0.1:8000"`,
		"https://user:s3cret@api.x.com": "upstream.headers",
		"http://127.0.0.1:9001/?a=b":    "no query",
		"http://127.0.0.1:9001#x":       "no query or fragment",
		"http://:9001":                  "no host",
		"http://127.0.0.1:99999":        "invalid port",
		"http://127.0.0.1:":             "empty port",
		"nonsense":                      "host:port",
		"127.0.0.1:9001/openai":         "host:port",
	}
	for in, want := range bad {
		got, err := NormalizeNode(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NormalizeNode(%q) = %q, %v; want an error saying %q", in, got, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") && !strings.Contains(in, "s3cret") {
			t.Errorf("error shows a password: %v", err)
		}
	}
}

// TestNodePathPrefix: a backend serving the OpenAI API under a path
// prefix (a provider's /openai, an ingress's /llm) is reached there by
// chat calls, /v1/models and health checks alike, over loopback HTTP.
// Before, an http:// node with a path was refused ("must be host:port
// or http://host:port") while an https:// one was taken whatever its
// path, so https://api.openai.com/v1 called /v1/v1/chat/completions.
func TestNodePathPrefix(t *testing.T) {
	var wrong atomic.Int64
	var checks atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openai/health":
			checks.Add(1)
		case "/openai/v1/models":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
		case "/openai/v1/chat/completions":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
		default:
			wrong.Add(1)
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(backend.Close)
	cfg := testConfig(backend.URL + "/openai/")
	cfg.Upstream.HealthPath = "/health"
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	a := call(t, http.MethodPost, base+wire.PathChat, "k1", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if a.status != http.StatusOK || a.outcome != wire.OutcomeOK.String() {
		t.Fatalf("chat: %v", a)
	}
	if m := call(t, http.MethodGet, base+wire.PathModels, "k1", ""); m.status != http.StatusOK || !strings.Contains(string(m.body), `"id":"m"`) {
		t.Fatalf("models: %v", m)
	}
	if checks.Load() == 0 || wrong.Load() != 0 {
		t.Fatalf("health checks under the prefix %d, calls elsewhere %d", checks.Load(), wrong.Load())
	}
}
