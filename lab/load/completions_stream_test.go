package load

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/internal/wire"
)

// TestCompletionsStreamRoute: the completions-stream route sends
// /v1/completions with "stream":true and reads the SSE answer to its end,
// as chat-stream does: against a real fake model node every request is ok,
// counted under its route; against a server that cuts half the streams
// before data: [DONE] (status 200, headers and chunks sent), those are
// errors and the rest ok, each request in exactly one outcome.
func TestCompletionsStreamRoute(t *testing.T) {
	k := fakemodel.DefaultKnobs()
	k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 1
	k.TTFTMs, k.TokensPerS, k.Slots = 1, 10000, 64
	node := startFakeNode(t, k)

	cfg := allRoutesConfig("http://" + node.Addr())
	cfg.Mix.Routes = map[string]float64{string(RouteCompletionsStream): 1}
	cfg.ClientTimeout = 10 * time.Second // only a broken request comes near it
	cfg.MaxOutstanding = 10000           // no generator_dropped on a slow machine
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, g, nil, 200, 300*time.Millisecond)
	tot := g.Totals()
	rt := tot.ByRoute[string(RouteCompletionsStream)]
	if tot.Offered == 0 || tot.Outcomes[wire.OutcomeOK.String()] != tot.Offered || rt.Offered != tot.Offered {
		t.Fatalf("fake node: offered %d, outcomes %v, route %+v: want every one ok under %s", tot.Offered, tot.Outcomes, rt, RouteCompletionsStream)
	}

	// A server that checks the request and cuts every other stream.
	var (
		n        atomic.Int64
		mu       sync.Mutex
		full     int
		cut      int
		problems []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream    bool   `json:"stream"`
			Prompt    string `json:"prompt"`
			MaxTokens int    `json:"max_tokens"`
		}
		err := json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		if err != nil || r.URL.Path != wire.PathCompletions || !body.Stream || body.Prompt == "" || body.MaxTokens != 16 ||
			r.Header.Get("Accept") != "text/event-stream" {
			problems = append(problems, fmt.Sprintf("%s %+v Accept %q: %v", r.URL.Path, body, r.Header.Get("Accept"), err))
		}
		whole := n.Add(1)%2 == 0
		if whole {
			full++
		} else {
			cut++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"t\"}]}\n\n")
		if whole {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	cfg.Targets = []string{srv.URL}
	g, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, g, nil, 200, 300*time.Millisecond)
	tot = g.Totals()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("server saw a malformed request: %s", p)
	}
	if full == 0 || cut == 0 || tot.Unaccounted() != 0 ||
		tot.Outcomes[wire.OutcomeOK.String()] != uint64(full) || tot.Outcomes[wire.OutcomeError.String()] != uint64(cut) ||
		tot.Offered != uint64(full+cut) {
		t.Fatalf("offered %d, outcomes %v: want %d ok (whole streams) and %d errors (cut before [DONE])", tot.Offered, tot.Outcomes, full, cut)
	}
}
