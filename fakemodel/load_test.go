package fakemodel

import (
	"context"
	"testing"
	"time"
)

// TestServiceTimeGrowsWithTokensAndLoad: service time really includes the
// token cost and the slow-down as slots fill (checked as lower bounds from
// the node's own service histogram, never as upper speed limits).
func TestServiceTimeGrowsWithTokensAndLoad(t *testing.T) {
	k := fixedKnobs(100, 2, OverflowQueue)
	k.MsPer1kTokens = 100
	k.AnswerTokens = 0 // every answer runs to max_tokens
	_, url := startNode(t, k)
	// 1000 completion tokens + 1 prompt token: 100 + 100.1 ms.
	start := time.Now()
	code, _, err := post(context.Background(), url+"/v1/chat/completions",
		`{"max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil || code != 200 {
		t.Fatal(code, err)
	}
	if el := time.Since(start); el < 195*time.Millisecond {
		t.Fatalf("1000 tokens at 100 ms/1k took %v, want ≥ 200 ms", el)
	}

	k = fixedKnobs(100, 2, OverflowQueue)
	k.Slowdown = 1
	n, url := startNode(t, k)
	codes := fill(t, n, url, 2, 2, 0)
	if got := collect(t, codes, 2); got[200] != 2 {
		t.Fatal(got)
	}
	// Busy 1 or 2 of 2 slots at start: each took 150 or 200 ms; together
	// at least 300 ms of service, where no slow-down would give 200 ms.
	sum := scrapeSum(t, url, "levee_fakemodel_service_seconds")
	if sum < 0.3 {
		t.Fatalf("service seconds %.3f for 2 concurrent requests with slowdown 1, want ≥ 0.3", sum)
	}
}

func scrapeSum(t *testing.T, url, hist string) float64 {
	t.Helper()
	resp, err := testClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := newParser()
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := fams[hist]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatalf("histogram %s missing", hist)
	}
	return f.GetMetric()[0].GetHistogram().GetSampleSum()
}

// TestGrowingSlotsWakesWaiters: raising slots at run time serves queued
// requests at once; lowering them lets requests in service finish.
func TestGrowingSlotsWakesWaiters(t *testing.T) {
	n, url := startNode(t, fixedKnobs(300, 1, OverflowQueue))
	codes := fill(t, n, url, 3, 1, 2)
	if _, err := n.PatchKnobs([]byte(`{"slots":3}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "queued requests to be served", func() bool {
		s, q, _ := n.slots.state()
		return s == 3 && q == 0
	})
	if _, err := n.PatchKnobs([]byte(`{"slots":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, codes, 3); got[200] != 3 {
		t.Fatal(got)
	}
	if s, q, l := n.slots.state(); s != 0 || q != 0 || l != 1 {
		t.Fatalf("after: in service %d queued %d limit %d", s, q, l)
	}
}
