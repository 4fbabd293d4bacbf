package fakemodel

import (
	"io"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestHealthPaths: a node answers liveness on /healthz and on vLLM's
// /health alike, so a probe or a gateway's health_path written for vLLM
// finds a fake model node alive (it got a 404 on /health).
func TestHealthPaths(t *testing.T) {
	_, url := startNode(t, fixedKnobs(1, 1, OverflowQueue))
	for _, p := range []string{wire.PathHealthz, wire.PathHealth} {
		resp, err := testClient.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d %s, want 200", p, resp.StatusCode, b)
		}
	}
}
