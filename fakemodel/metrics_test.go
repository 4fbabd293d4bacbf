package fakemodel

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/wire/wiretest"
)

// TestMetricsContract: a node's /metrics, after a request, follows
// Prometheus conventions (promlint finds nothing) and serves exactly
// wire's catalogue, with its types and labels.
func TestMetricsContract(t *testing.T) {
	_, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	if code, _, err := post(context.Background(), url+wire.PathChat, chatBody); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	wiretest.CheckServer(t, url, wire.FakeModelMetrics())
}

// TestMeanServiceMetricCapped: the capacity basis a node exports is the
// mean of its capped draws, not the uncapped lognormal's (12,663 s for
// p50 1 ms, p99 600 s) nor an overflowed negative (p50 1e-6 ms).
func TestMeanServiceMetricCapped(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	for _, tc := range []struct {
		patch  string
		lo, hi float64 // seconds
	}{
		{`{"latency":{"dist":"lognormal","p50_ms":1,"p99_ms":600000}}`, 10.3, 10.5},
		{`{"latency":{"dist":"lognormal","p50_ms":0.000001,"p99_ms":600000}}`, 7.6, 7.8},
		{`{"latency":{"dist":"fixed","fixed_ms":250}}`, 0.25, 0.25},
	} {
		if _, err := n.PatchKnobs([]byte(tc.patch)); err != nil {
			t.Fatal(err)
		}
		if got := scrape(t, url)["levee_fakemodel_mean_service_seconds"]; !(got >= tc.lo && got <= tc.hi) {
			t.Errorf("%s: mean service %g s, want within [%g, %g]", tc.patch, got, tc.lo, tc.hi)
		}
	}
}

// TestEachNodeServesItsOwnSeries: a process of two nodes serves, on each
// node's /metrics, that node's series only, every one labelled node=<its
// address> (docs/CONTRACTS.md); the lab sums the nodes' scrapes, so a
// series shared between them would count twice. Only the first node
// answers a request: only its ok counter moves.
func TestEachNodeServesItsOwnSeries(t *testing.T) {
	lns, err := Listen("127.0.0.1", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(lns, WithKnobs(fixedKnobs(1, 2, OverflowQueue)), WithAdminToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	nodes := s.Nodes()
	if code, _, err := post(context.Background(), "http://"+nodes[0].Addr()+wire.PathChat, chatBody); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	for i, n := range nodes {
		resp, err := testClient.Get("http://" + n.Addr() + wire.PathMetrics)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		own := `node="` + n.Addr() + `"`
		series, ok := 0, ""
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(line, "levee_") {
				continue
			}
			series++
			if !strings.Contains(line, own) {
				t.Errorf("node %d (%s) serves %q, not labelled %s", i, n.Addr(), line, own)
			}
			if strings.HasPrefix(line, wire.MetricFakeRequests+"{") && strings.Contains(line, `outcome="ok"`) {
				ok = line[strings.LastIndexByte(line, ' ')+1:]
			}
		}
		if want := []string{"1", "0"}[i]; series == 0 || ok != want {
			t.Errorf("node %d: %d levee_ series, ok requests %q; want %s", i, series, ok, want)
		}
	}
}
