package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// A reachable redis-server that cannot decide — made a read-only replica
// (READONLY), full at maxmemory with noeviction (OOM), paused (CLIENT
// PAUSE: the decisions time out) — sends decisions to the local share,
// each counted; the breaker opens with one warning that names Redis's
// error and does not call the store unreachable (it answered), and closes
// once the fault ends, after which Redis decides again. Faults end on an
// event (the breaker open), not after a sleep; the store's timeout is a
// second (sureTimeout), so a loaded machine's stall is not a fault.
func TestRedisFaultsFallBackAndRecover(t *testing.T) {
	srv := redistest.Start(t)
	other := redistest.Start(t) // the primary of the read-only fault
	// One connection, opened before any fault: a new one would wait out
	// a CLIENT PAUSE in its handshake, and could not end it.
	rc := rawClient(t, srv).Conn()
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	do := func(t *testing.T, args ...any) {
		t.Helper()
		if err := rc.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for _, tc := range []struct {
		name       string
		start, end []any
		says       []string // in the warning: one of these
	}{
		{"read-only replica", []any{"REPLICAOF", "127.0.0.1", fmt.Sprint(other.Port())}, []any{"REPLICAOF", "NO", "ONE"}, []string{"READONLY"}},
		{"maxmemory noeviction", []any{"CONFIG", "SET", "maxmemory", "1"}, []any{"CONFIG", "SET", "maxmemory", "0"}, []string{"OOM command not allowed"}},
		// An hour's pause of writes (EVALSHA may write): only UNPAUSE
		// ends it (a pause of ALL would hold UNPAUSE too).
		{"client pause", []any{"CLIENT", "PAUSE", "3600000", "WRITE"}, []any{"CLIENT", "UNPAUSE"}, []string{"i/o timeout", "context deadline exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
			st, closer, err := Open(StoreConfig{Kind: "redis", URL: srv.URL(), TimeoutMs: int(sureTimeout / time.Millisecond), Share: 0.5, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			f := st.(*Failover)
			// A token bucket writes on every decision (HSET), so each one
			// meets the fault.
			rule := Rule{Algorithm: TokenBucket, ReplenishRate: 1000, Burst: 1000}
			decisions := 0
			decide := func() {
				t.Helper()
				if _, err := f.Allow(ctx, "tenant", rule, 1, time.Now()); err != nil {
					t.Fatalf("decision %d: %v (a fault must fall back, not fail)", decisions, err)
				}
				decisions++
			}
			decide()
			if f.RemoteDecisions() != 1 {
				t.Fatalf("first decision not made by Redis (remote %d)", f.RemoteDecisions())
			}
			do(t, tc.start...)
			ended := false
			endFault := func() {
				if !ended {
					ended = true
					do(t, tc.end...)
				}
			}
			defer endFault()
			waitFor(t, "the breaker to open", func() bool { decide(); return f.State() == BreakerOpen })
			endFault()
			fallbacks := f.Fallbacks()
			if fallbacks == 0 {
				t.Fatal("no fallback counted during the fault")
			}
			waitFor(t, "the breaker to close", func() bool { decide(); return f.State() == BreakerClosed })
			remote := f.RemoteDecisions()
			decide()
			if f.RemoteDecisions() != remote+1 {
				t.Fatal("the decision after the breaker closed was not made by Redis")
			}
			if got := f.RemoteDecisions() + f.Fallbacks(); got != uint64(decisions) {
				t.Errorf("remote %d + fallbacks %d ≠ %d decisions", f.RemoteDecisions(), f.Fallbacks(), decisions)
			}
			mu.Lock()
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			mu.Unlock()
			if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[1], "store back") {
				t.Fatalf("log %q, want one warning (opened) and one line (closed)", lines)
			}
			says := slices.ContainsFunc(tc.says, func(s string) bool { return strings.Contains(lines[0], s) })
			if !says || !strings.Contains(lines[0], "store unavailable") || strings.Contains(lines[0], "unreachable") {
				t.Errorf("warning %q: want \"store unavailable\" and Redis's error (one of %q), not \"unreachable\" (Redis answered)", lines[0], tc.says)
			}
			t.Logf("%s: %d decisions, %d fallbacks; %s", tc.name, decisions, f.Fallbacks(), lines[0])
		})
	}
}

// waitFor calls cond until it holds, for at most a minute (a hang guard).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
