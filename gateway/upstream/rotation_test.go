package upstream

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rotationLog records the hook's calls.
type rotationLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *rotationLog) hook(from, to int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("%d→%d", from, to))
}

func (l *rotationLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.calls)
}

// A node process SIGKILLed leaves the rotation (its port refuses the
// health check), a node that fails its checks too, and one that passes
// them again comes back: the hook hears each change once, in order.
func TestRotationHookFollowsHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	checkGoroutines(t)
	childURL, cmd, _ := startChild(t)
	a, b := newTestNode(t), newTestNode(t)
	var log rotationLog
	p := newPool(t, Config{Nodes: []string{childURL, a.srv.URL, b.srv.URL}, HealthInterval: 20 * time.Millisecond}, WithRotationHook(log.hook))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	if n := p.InRotation(); n != 3 {
		t.Fatalf("InRotation %d at the start, want 3", n)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	eventually(t, "the killed node out of rotation", func() bool { return p.InRotation() == 2 })
	a.healthy.Store(false)
	eventually(t, "the failing node out of rotation", func() bool { return p.InRotation() == 1 })
	a.healthy.Store(true)
	eventually(t, "the node back in rotation", func() bool { return p.InRotation() == 2 })
	eventually(t, "the hook told", func() bool { return log.String() == "[3→2 2→1 1→2]" })
}

// An outlier ejection takes a node out of rotation and turning ejection
// off puts it back; a rotation change the count does not see (a down
// node ejected) calls nothing.
func TestRotationHookFollowsEjection(t *testing.T) {
	var log rotationLog
	urls := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	p := newPool(t, Config{Nodes: urls}, WithClock(newFakeClock()), WithRotationHook(log.hook))
	seedOutcomes(p, 0, 70, 30)
	seedOutcomes(p, 1, 100, 0)
	seedOutcomes(p, 2, 100, 0)
	p.outliers.evaluate(p.clock.Now())
	if got := states(p); fmt.Sprint(got) != "[ejected in_rotation in_rotation]" {
		t.Fatalf("states %v", got)
	}
	if n := p.InRotation(); n != 2 {
		t.Fatalf("InRotation %d after an ejection, want 2", n)
	}
	p.SetBreakerEnabled(false)
	if n := p.InRotation(); n != 3 {
		t.Fatalf("InRotation %d with ejection off, want 3", n)
	}
	if got := log.String(); got != "[3→2 2→3]" {
		t.Fatalf("hook calls %s, want [3→2 2→3]", got)
	}
}
