package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/scrape"
)

// liveWindow is a recording started while load runs: it counts the
// requests offered inside it, by their offer time, whatever happens to
// them after it ends, and checks the gateways' shed counters against the
// clients' sheds across two scrapes at its edges.
//
// Its tracker's epochs: 0 from Track, 1 while the start scrape runs, 2 the
// window (counted), 3 while the end scrape runs, 4 after it.
type liveWindow struct {
	tr    *load.Tracker
	start gatewayShed // the gateways' shed counters at the start
}

// The tracker epochs of a live window.
const (
	epochStartScrape = 1
	epochWindow      = 2
	epochEndScrape   = 3
	epochAfter       = 4
)

// gatewayShed is one read of every gateway's levee_shed_total.
type gatewayShed struct {
	shed     []float64 // each gateway's counter (0 when it did not answer)
	answered []bool    // each gateway was up and answered, from one process
	starts   []int     // each gateway's process count when read
	ok       bool      // every gateway was up and answered
}

// openWindow starts counting a recording's requests: it scrapes the
// gateways' shed counters, then opens the window and returns when it
// opened.
func (l *Lab) openWindow() (*liveWindow, time.Time) {
	w := &liveWindow{tr: l.gen.Track()}
	w.tr.Mark(false)
	w.start = l.sampling.gatewayShedNow()
	_, at := w.tr.Mark(true)
	return w, at
}

// closeWindow ends the window now, scrapes the gateways' counters again
// and waits (bounded by the client timeout) for every request offered
// before that scrape ended to end. It returns the window's totals, the
// shed check and when the window ended.
func (l *Lab) closeWindow(w *liveWindow) (load.Totals, runfiles.ShedCheck, time.Time) {
	defer w.tr.Close()
	_, closed := w.tr.Mark(false)
	end := l.sampling.gatewayShedNow()
	w.tr.Mark(false)
	ctx, cancel := context.WithTimeout(l.ctx, l.exp.ClientTimeout.D()+5*time.Second)
	defer cancel()
	if err := w.tr.Wait(ctx, epochAfter); err != nil {
		tot := w.tr.Totals()
		l.event(runfiles.EventError, fmt.Sprintf("recording: %d requests of the window had not ended %s after it", tot.Outstanding, l.exp.ClientTimeout.D()+5*time.Second), nil)
	}
	tot := w.tr.Totals()
	surely, inDoubt := edgeSheds(w.tr.Cells())
	gw, exact := shedIncrease(w.start, end)
	return tot, runfiles.NewShedCheck(uint64(gw+0.5), surely, inDoubt, exact), closed
}

// shedIncrease is the gateways' shed counters' increase from start to end,
// gateway by gateway, and whether it is exact. A counter reset counts the
// way Prometheus's increase() counts it: a gateway whose counter dropped
// restarted, and its new process counted from 0, so its whole value at end
// is the increase since the reset. So is a gateway's whose process count
// changed, even if its new counter has already passed the old one (a reset
// increase() cannot see). Either way the old process's counts after the
// start scrape are lost: the figure is then a lower bound, not exact. A
// gateway that did not answer at end adds nothing; one that did not answer
// at start, and did not restart, has no baseline and adds nothing either.
func shedIncrease(start, end gatewayShed) (float64, bool) {
	exact := start.ok && end.ok && len(start.starts) == len(end.starts)
	inc := 0.0
	for i := range min(len(start.starts), len(end.starts)) {
		restarted := end.starts[i] != start.starts[i]
		switch {
		case !end.answered[i]:
			exact = false
		case restarted || start.answered[i] && end.shed[i] < start.shed[i]:
			inc += end.shed[i] // reset: the counter started again at 0
			exact = false
		case start.answered[i]:
			inc += end.shed[i] - start.shed[i]
		default:
			exact = false
		}
	}
	return inc, exact
}

// edgeSheds splits the sheds of a live window's tracker by whether the
// gateways must have counted them between the two scrapes (offered after
// the first ended, ended before the second began) or may have (ended after
// the first began, offered before the second ended): a shed is decided
// after its request is offered and before the client reads it. A timeout
// in that second range is in doubt too: the gateway may have shed the
// request after its client gave up.
func edgeSheds(cells map[load.Cell]uint64) (surely, inDoubt uint64) {
	for c, n := range cells {
		shed, timeout := c.Outcome.IsShed(), c.Outcome == wire.OutcomeTimeout
		if !shed && !timeout {
			continue
		}
		switch {
		case shed && c.Offered >= epochWindow && c.Ended <= epochWindow:
			surely += n
		case c.Ended >= epochStartScrape && c.Offered <= epochEndScrape:
			inDoubt += n
		}
	}
	return surely, inDoubt
}

// gatewayShedNow scrapes every gateway now, concurrently, and sums their
// levee_shed_total.
func (s *sampling) gatewayShedNow() gatewayShed {
	n := len(s.gateways)
	out := gatewayShed{ok: true, shed: make([]float64, n), answered: make([]bool, n), starts: make([]int, n)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, sl := range s.gateways {
		c := sl.child
		out.starts[i] = c.Starts()
		if !c.Up() {
			out.ok = false
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(s.l.ctx, max(4*s.tick, time.Second))
			defer cancel()
			f, err := scrape.Scrape(ctx, s.httpc, "http://"+c.Listen()+wire.PathMetrics)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || c.Starts() != out.starts[i] {
				out.ok = false
				return
			}
			out.shed[i], out.answered[i] = f.Sum(wire.MetricShed, nil), true
		})
	}
	wg.Wait()
	return out
}
