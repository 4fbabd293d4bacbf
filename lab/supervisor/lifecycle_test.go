package supervisor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
)

// A gateway that is down has no memory: the supervisor's RSS (the
// dashboard's and the recording's gateway RSS) drops its last reading when
// it ends — after a crash as after an OOM kill — rather than showing a
// dead process's last VmRSS until the restart.
func TestRSSOfACrashedGatewayIsGone(t *testing.T) {
	h := startHelperLab(t, 2, Config{RestartDelay: time.Hour}, func(int) string { return "serve" })
	waitFor(t, 10*time.Second, "no RSS read of both gateways", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.gwRSS[0] > 0 && h.gwRSS[1] > 0
	})
	h.crash(t, h.Gateways()[0])
	waitFor(t, 5*time.Second, "the crashed gateway's RSS is still counted", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.gwRSS[0] == 0
	})
	h.mu.Lock()
	live := h.gwRSS[1]
	h.mu.Unlock()
	if live == 0 {
		t.Error("the live gateway's RSS went with the crashed one's")
	}
}

// A gateway restart that fails is tried again, each time after twice the
// previous delay: one that exits before its ready line is not restarted
// at the restart delay forever (15 starts in 3 s at a 100 ms delay, each
// with an exit event, an error event and its log's tail printed), and
// one that hangs is not given up on after its ready timeout (it stayed
// down for the rest of the run).
func TestFailedRestartsBackOff(t *testing.T) {
	modes := []string{"serve", "exit", "exit", "hang", "exit", "serve"}
	h := startHelperLab(t, 1, Config{RestartDelay: 100 * time.Millisecond, ReadyTimeout: time.Second}, func(n int) string {
		return modes[min(n, len(modes)-1)]
	})
	g := h.Gateways()[0]
	h.crash(t, g)
	waitFor(t, 30*time.Second, "the gateway is not back after its failed restarts", g.Up)
	if g.Starts() != len(modes) {
		t.Errorf("%d starts, want %d", g.Starts(), len(modes))
	}
	var delays []float64
	for _, e := range h.eventsOf(runfiles.EventError) {
		delays = append(delays, e.fields["retry_in_s"].(float64))
	}
	if want := []float64{0.2, 0.4, 0.8, 1.6}; !slices.Equal(delays, want) {
		t.Errorf("failed restarts retried after %v s, want %v", delays, want)
	}
	if n := len(h.eventsOf(runfiles.EventChildExit)); n != 1 {
		t.Errorf("%d exit events, want 1 (the crash; a failed start is its restart's error)", n)
	}
	if c := h.Counters(); c.Restarts != 1 {
		t.Errorf("%d restarts counted, want 1", c.Restarts)
	}
}

func TestNextRestartDelay(t *testing.T) {
	for _, tc := range []struct{ d, delay, want time.Duration }{
		{2 * time.Second, 2 * time.Second, 4 * time.Second},
		{40 * time.Second, 2 * time.Second, time.Minute},
		{0, 0, 100 * time.Millisecond},
		{5 * time.Minute, 5 * time.Minute, 5 * time.Minute},
	} {
		if got := nextRestartDelay(tc.d, tc.delay); got != tc.want {
			t.Errorf("nextRestartDelay(%v, %v) = %v, want %v", tc.d, tc.delay, got, tc.want)
		}
	}
}

// StartedAt is each process's start, read before its fork: the sampler's
// first rate of a new process is over the time since then.
func TestStartedAtIsEachProcesssStart(t *testing.T) {
	before := time.Now()
	h := startHelperLab(t, 1, Config{RestartDelay: 10 * time.Millisecond}, func(int) string { return "serve" })
	g := h.Gateways()[0]
	first := g.StartedAt()
	if first.Before(before) || first.After(time.Now()) {
		t.Fatalf("StartedAt %v, want between %v and now", first, before)
	}
	h.crash(t, g)
	waitFor(t, 20*time.Second, "the gateway is not back", g.Up)
	if !g.StartedAt().After(first) {
		t.Errorf("StartedAt %v after a restart, want later than the first %v", g.StartedAt(), first)
	}
}

// A gateway whose resident memory reaches the pod limit is SIGKILLed
// there, counted, and restarted: the limit is in bytes and VmRSS (kB) is
// read in bytes, of the gateway's own pid.
func TestOOMKillAtTheLimit(t *testing.T) {
	const limit = 48 << 20
	h := startHelperLab(t, 1, Config{MemoryLimit: limit, RestartDelay: 10 * time.Millisecond}, func(n int) string {
		if n == 0 {
			return "grow"
		}
		return "serve"
	})
	g := h.Gateways()[0]
	first := g.PID()
	waitFor(t, 20*time.Second, "no OOM kill of a gateway growing to 256 MiB over a 48 MiB limit", func() bool {
		return len(h.eventsOf(runfiles.EventOOMKill)) > 0
	})
	e := h.eventsOf(runfiles.EventOOMKill)[0]
	rss := e.fields["rss_bytes"].(uint64)
	// The stand-in grows 4 MiB per 10 ms and is read every 100 ms: it is
	// killed within a few reads' growth of the limit, never below it.
	if rss < limit || rss > limit+256<<20 || e.fields["pid"] != first {
		t.Errorf("OOM kill at %d bytes of pid %v, want ≥ %d of pid %d", rss, e.fields["pid"], limit, first)
	}
	if peak := h.TakeRSSPeak(); peak < float64(rss) {
		t.Errorf("RSS peak %.0f bytes, under the reading that killed the gateway (%d)", peak, rss)
	}
	waitFor(t, 20*time.Second, "the OOM-killed gateway is not back", func() bool { return g.Up() && g.PID() != first })
	if c := h.Counters(); c.OOMKills != 1 || c.Restarts != 1 {
		t.Errorf("counters %+v, want 1 OOM kill and 1 restart", c)
	}
}

// Two Starts of one child at once (RestartNode from a fault's revert and
// from another caller) start one process: the other is refused while the
// first is starting. Both used to launch, on the same port (3 starts):
// one failed to bind, its exit marked the Child down while the other
// served, and the Child kept whichever launched last — a survivor it did
// not keep served untracked, beyond the reach of Kill and Close.
func TestConcurrentStartsStartOneProcess(t *testing.T) {
	h := startHelperLab(t, 1, Config{RestartDelay: time.Hour}, func(int) string { return "serve" })
	g := h.Gateways()[0]
	h.crash(t, g)
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- g.Start(t.Context()) }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) {
		t.Fatalf("two concurrent starts: errors %v and %v, want exactly one to succeed", e1, e2)
	}
	if g.Starts() != 2 || !g.Up() {
		t.Errorf("%d starts (want 2: the first and one restart), up %v", g.Starts(), g.Up())
	}
	pid := g.PID()
	g.Close(time.Second)
	if alive(pid) {
		t.Errorf("the started process %d outlived Close", pid)
	}
}

// A start that fails says why on its error's first line — the child's
// name, what happened and the line of its own output that says why —
// and shows only this process's output: the lines an earlier process of
// the child left in the same log are not the cause. Before, the error
// ended with the log's last 12 lines, most of them the dead process's
// (its start line, ready line and exit), and the cause sat after the
// first line, where the dashboard's status line (one line) never showed
// it: "node-0: exited before ready (exit status 1); log…".
func TestFailedStartSaysWhy(t *testing.T) {
	modes := []string{"serve", "exit", "hang"}
	h := startHelperLab(t, 1, Config{RestartDelay: time.Hour, ReadyTimeout: time.Second}, func(n int) string {
		return modes[min(n, len(modes)-1)]
	})
	g := h.Gateways()[0]
	g.Kill() // on purpose: no restart
	for _, want := range []string{
		"gateway-0: exited before ready (exit status 1): helper: exiting before ready, as told",
		"gateway-0: not ready after 1s (killed): helper: hanging before ready, as told",
	} {
		err := g.Start(context.Background())
		if err == nil {
			t.Fatalf("start succeeded, want %q", want)
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		if !strings.HasPrefix(first, want) || !strings.Contains(first, g.LogPath()) {
			t.Errorf("error's first line %q, want %q and the log's path", first, want)
		}
		if strings.Contains(err.Error(), "levee_ready") || strings.Contains(err.Error(), "----") {
			t.Errorf("error shows an earlier process's lines or the supervisor's:\n%v", err)
		}
	}
}
