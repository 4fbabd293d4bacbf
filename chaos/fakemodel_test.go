package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/internal/wire"
)

const nodeToken = "chaos-test-token-0123456789"

// nodeEnv is a fakeEnv whose knob patches go to real fake model nodes over
// their admin API, as the lab's do.
type nodeEnv struct {
	*fakeEnv
	urls []string
}

func startNodes(t *testing.T, count int) *nodeEnv {
	t.Helper()
	env := &nodeEnv{fakeEnv: newFakeEnv(count)}
	k := fakemodel.DefaultKnobs()
	k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 1
	for range count {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n, err := fakemodel.NewNode(ln, fakemodel.WithKnobs(k), fakemodel.WithAdminToken(nodeToken))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- n.Serve() }()
		t.Cleanup(func() {
			n.Close()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
		env.urls = append(env.urls, "http://"+n.Addr())
	}
	return env
}

func (e *nodeEnv) admin(ctx context.Context, node int, method string, body []byte) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.urls[node]+wire.PathAdminKnobs, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", node, err)
	}
	req.Header.Set("Authorization", "Bearer "+nodeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", node, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("node %d: reading the answer: %w", node, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %d: %s %s: %d %s", node, method, wire.PathAdminKnobs, resp.StatusCode, b)
	}
	var knobs map[string]any
	if err := json.Unmarshal(b, &knobs); err != nil {
		return nil, fmt.Errorf("node %d: decoding the knobs: %w", node, err)
	}
	return knobs, nil
}

func (e *nodeEnv) PatchNodeKnobs(ctx context.Context, node int, patch map[string]any) (map[string]any, error) {
	before, err := e.admin(ctx, node, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("node %d: encoding the patch: %w", node, err)
	}
	if _, err := e.admin(ctx, node, http.MethodPut, b); err != nil {
		return nil, err
	}
	return before, nil
}

// outcome posts one chat request to node and returns its status, or 0 when
// the client's deadline passed first.
func (e *nodeEnv) outcome(t *testing.T, node int, timeout time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.urls[node]+wire.PathChat,
		strings.NewReader(`{"max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if errors.Is(err, context.DeadlineExceeded) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestHangAndErrorsTogether: node_hang and model_errors at their defaults
// (node 0 hangs every request; every node fails half) apply together on
// real nodes, in either order, and revert to the nodes' knobs. The nodes
// refused the second patch while error_rate + hang_rate had to be ≤ 1.
func TestHangAndErrorsTogether(t *testing.T) {
	for _, hangFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("hang first %v", hangFirst), func(t *testing.T) {
			env := startNodes(t, 2)
			ctx := context.Background()
			hang, errs := NewNodeHang(), NewModelErrors()
			faults := []Fault{hang, errs}
			if !hangFirst {
				faults = []Fault{errs, hang}
			}
			for _, f := range faults {
				if err := f.Validate(); err != nil {
					t.Fatal(err)
				}
				if err := f.Apply(ctx, env); err != nil {
					t.Fatalf("%s on top of the other fault: %v", f.Name(), err)
				}
			}
			if got := env.outcome(t, 0, 200*time.Millisecond); got != 0 {
				t.Errorf("node 0 answered %d under node_hang, want no answer", got)
			}
			codes := map[int]int{}
			for range 40 {
				codes[env.outcome(t, 1, 5*time.Second)]++
			}
			if codes[200] == 0 || codes[500] == 0 || codes[200]+codes[500] != 40 {
				t.Errorf("node 1 under model_errors 50 %%: %v, want both 200 and 500", codes)
			}
			for i := len(faults) - 1; i >= 0; i-- {
				if err := faults[i].Revert(ctx, env); err != nil {
					t.Fatalf("%s revert: %v", faults[i].Name(), err)
				}
			}
			for node := range 2 {
				k, err := env.admin(ctx, node, http.MethodGet, nil)
				if err != nil {
					t.Fatal(err)
				}
				if k[wire.KnobHangRate] != 0.0 || k[wire.KnobErrorRate] != 0.0 {
					t.Errorf("node %d after revert: hang_rate %v error_rate %v, want 0", node, k[wire.KnobHangRate], k[wire.KnobErrorRate])
				}
			}
		})
	}
}
