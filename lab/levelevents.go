package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
)

// levelLog records every gateway's overload level changes as events, with
// their causes: a level change seen in a sample makes it read each
// gateway's GET /admin/state (off the sampling goroutine) and record the
// changes it has not recorded yet (by their sequence number). A sample's
// level is the worst gateway's, so a gateway's change can leave it as it
// was: a recording reads once more as it ends (flush), and holds them all.
// A recording started while the lab runs takes a baseline first, so that
// it holds the changes made while it runs, not the gateways' history.
type levelLog struct {
	l       *Lab
	readMu  sync.Mutex // held for a whole read: one at a time
	mu      sync.Mutex
	busy    bool     // a read is under way; guarded by mu
	again   bool     // the level changed during that read: read again; guarded by mu
	lastSeq []uint64 // per gateway, the last change recorded; guarded by mu
	// starts is, per gateway, the process (Child.Starts) lastSeq counts
	// in: a restarted gateway numbers its changes from 1 again. Guarded by mu.
	starts []int
	level  string // the level of the last sample (sampling goroutine only)
}

// gatewayLevelChange is one entry of the guard's changes in /admin/state.
type gatewayLevelChange struct {
	Seq       uint64    `json:"seq"`
	At        time.Time `json:"at"`
	From      string    `json:"from"` // a level name
	To        string    `json:"to"`
	Signal    string    `json:"signal"`
	Value     float64   `json:"value"`
	Threshold float64   `json:"threshold"`
	Shed      float64   `json:"shed"`
}

// observe is called with every sample's level (sampling goroutine).
func (g *levelLog) observe(level string, stale bool) {
	if stale || level == "" || level == g.level {
		return
	}
	first := g.level == ""
	g.level = level
	if first && level == wire.LevelName(0) {
		return
	}
	g.mu.Lock()
	if g.busy {
		g.again = true
		g.mu.Unlock()
		return
	}
	g.busy = true
	g.mu.Unlock()
	go g.read()
}

// read records the new changes, again while the level changed meanwhile.
func (g *levelLog) read() {
	for {
		g.readAll()
		g.mu.Lock()
		again := g.again
		g.again, g.busy = false, again
		g.mu.Unlock()
		if !again {
			return
		}
	}
}

// flush records every change the gateways report and that is not recorded
// yet, now (a recording about to end).
func (g *levelLog) flush() { g.readAll() }

// baseline marks the changes every gateway reports now as recorded, so
// that a recording starting now holds only the changes made after it
// began. A gateway that does not answer keeps its mark.
func (g *levelLog) baseline(ctx context.Context) {
	n := len(g.l.sup.Gateways())
	for i := range n {
		var st struct {
			Guard struct {
				ChangeSeq uint64 `json:"change_seq"`
			} `json:"guard"`
		}
		starts := g.l.sup.Gateways()[i].Starts()
		if err := g.l.sup.GatewayState(ctx, i, &st); err != nil || g.l.sup.Gateways()[i].Starts() != starts {
			continue
		}
		g.mu.Lock()
		g.processLocked(n, i, starts)
		g.lastSeq[i] = max(g.lastSeq[i], st.Guard.ChangeSeq)
		g.mu.Unlock()
	}
}

// readAll records the changes each gateway reports and that are new.
func (g *levelLog) readAll() {
	g.readMu.Lock()
	defer g.readMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n := len(g.l.sup.Gateways())
	for i := range n {
		var st struct {
			Guard struct {
				Changes []gatewayLevelChange `json:"changes"`
			} `json:"guard"`
		}
		starts := g.l.sup.Gateways()[i].Starts()
		if err := g.l.sup.GatewayState(ctx, i, &st); err != nil || g.l.sup.Gateways()[i].Starts() != starts {
			continue // restarting or stopped: its changes are lost with it
		}
		g.mu.Lock()
		g.processLocked(n, i, starts)
		var fresh []gatewayLevelChange
		for _, c := range st.Guard.Changes {
			if c.Seq > g.lastSeq[i] {
				fresh = append(fresh, c)
				g.lastSeq[i] = c.Seq
			}
		}
		g.mu.Unlock()
		for _, c := range fresh {
			g.l.event(runfiles.EventLevel, levelDetail(i, c), map[string]any{
				"gateway": i, "from": c.From, "to": c.To, "signal": c.Signal,
				"value": c.Value, "threshold": c.Threshold, "shed": round(c.Shed, 3), "changed_at": c.At.UTC().Format(time.RFC3339Nano),
			})
		}
	}
}

// processLocked sizes the marks for n gateways and starts gateway i's
// mark again at 0 when its process is not the one the mark counts in
// (starts: its Child.Starts); g.mu held.
func (g *levelLog) processLocked(n, i, starts int) {
	if len(g.lastSeq) < n {
		g.lastSeq = append(g.lastSeq, make([]uint64, n-len(g.lastSeq))...)
		g.starts = append(g.starts, make([]int, n-len(g.starts))...)
	}
	if g.starts[i] != starts {
		g.lastSeq[i], g.starts[i] = 0, starts
	}
}

// levelDetail is the event's line: "gateway-0 green → yellow: queue_fill 0.62 ≥ 0.5".
func levelDetail(i int, c gatewayLevelChange) string {
	d := fmt.Sprintf("gateway-%d %s → %s", i, c.From, c.To)
	switch c.Signal {
	case "":
		return d + ": every signal below its release mark"
	case "forced":
		return d + ": forced"
	}
	return fmt.Sprintf("%s: %s %.3g ≥ %.3g", d, c.Signal, c.Value, c.Threshold)
}
