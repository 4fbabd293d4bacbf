package fakemodel

import (
	"bufio"
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// TestTokenScheduleSaturates: a token rate too low for a Duration makes
// the interval, and every later token's due time, the largest Duration —
// never a wrapped-around negative that streams the rest at once.
func TestTokenScheduleSaturates(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name     string
		rate     float64
		busy     int
		want     time.Duration
		slowdown float64
	}{
		{"defaults", 50, 0, 20 * time.Millisecond, 0},
		{"fastest", 100_000, 0, 10 * time.Microsecond, 0},
		{"slowed by load", 50, 16, 40 * time.Millisecond, 1},
		{"one token a century", 1 / (100 * 365.25 * 86400), 0, 100 * 365.25 * 86400 * time.Second, 0},
		{"1e-10 tokens/s", 1e-10, 0, maxD, 0},
		{"slowed past the range", 1e-9, 16, maxD, 100},
		{"smallest rate", math.SmallestNonzeroFloat64, 16, maxD, 100},
	} {
		k := DefaultKnobs()
		k.TokensPerS, k.Slowdown = tc.rate, tc.slowdown
		if err := k.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := k.TokenInterval(tc.busy)
		if math.Abs(float64(got)-float64(tc.want)) > float64(time.Microsecond) { // in floats: no wrap-around
			t.Errorf("%s: TokenInterval %d, want %d", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ttft, every time.Duration
		i           int
		want        time.Duration
	}{
		{200 * time.Millisecond, 20 * time.Millisecond, 3, 260 * time.Millisecond},
		{200 * time.Millisecond, maxD, 0, 200 * time.Millisecond},
		{time.Nanosecond, time.Nanosecond, openai.MaxTokens, (openai.MaxTokens + 1) * time.Nanosecond},
		{200 * time.Millisecond, maxD, 1, maxD},
		{0, maxD / 2, 3, maxD},
		{maxD, time.Nanosecond, openai.MaxTokens, maxD},
	} {
		if got := tokenDue(tc.ttft, tc.every, tc.i); got != tc.want {
			t.Errorf("tokenDue(%d, %d, %d) = %d, want %d", tc.ttft, tc.every, tc.i, got, tc.want)
		}
	}
}

// TestTinyTokenRateStalls: a node told a rate of 1e-10 tokens/s sends the
// first token and then nothing before the client's deadline (it streamed
// the whole answer at once when the interval overflowed to a negative).
func TestTinyTokenRateStalls(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 2, OverflowQueue))
	if _, err := n.PatchKnobs([]byte(`{"tokens_per_s":1e-10,"ttft_ms":0,"abort_on_disconnect":true}`)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+wire.PathChat,
		strings.NewReader(`{"stream":true,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("the first token is due at once: %v", err)
	}
	defer resp.Body.Close()
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if line == "[DONE]" {
				t.Fatalf("the stream ended after %d chunks: a rate of 1e-10 tokens/s streamed at once", chunks)
			}
			chunks++
		}
	}
	if err := sc.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read ended with %v, want the client's deadline", err)
	}
	if chunks != 1 {
		t.Errorf("%d chunks before the deadline, want the first token only", chunks)
	}
	waitFor(t, "the stalled stream's slot to free", func() bool { s, _, _ := n.slots.state(); return s == 0 })
}
