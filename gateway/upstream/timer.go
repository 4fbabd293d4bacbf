package upstream

import (
	"fmt"
	"runtime/debug"
	"time"
)

// Names of the pool's timers, as logged when one panics.
const (
	timerAttemptTimeout = "attempt_timeout"
	timerHedge          = "hedge"
)

// afterSafe schedules f after d with p.after, a panic in it caught (see
// runTimer): a timer's callback runs in a goroutine of its own, where an
// uncaught panic would end the process. undo (nil: none) puts right what
// f may have left half done.
func (p *Pool) afterSafe(d time.Duration, timer string, f, undo func()) func() bool {
	return p.after(d, func() { p.runTimer(timer, f, undo) })
}

// runTimer runs the callback f of the named timer. A panic in it (a bug)
// is logged once with its stack, counted in
// levee_upstream_timer_panics_total, and followed by undo: the call goes
// on as if the timer had found nothing to do — an attempt whose timeout
// panicked runs on until its answer or the caller's deadline, a call
// whose hedge timer panicked is not hedged. No node is blamed.
func (p *Pool) runTimer(timer string, f, undo func()) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		p.timerPanics.Add(1)
		p.log.Error("upstream: timer panicked", "timer", timer, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if undo != nil {
			undo()
		}
	}()
	if p.timerHook != nil {
		p.timerHook(timer)
	}
	f()
}
