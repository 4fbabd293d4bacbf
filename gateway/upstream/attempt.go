package upstream

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// failureKind is why an attempt failed.
type failureKind int

const (
	failNone    failureKind = iota
	failConnect             // dial refused, reset, EOF before the first byte
	failStatus              // a 5xx answer
	failTimeout             // abandoned by the attempt timeout
	numFailureKinds
)

var failureNames = [numFailureKinds]string{"", wire.AttemptFailConnect, wire.AttemptFailStatus, wire.AttemptFailTimeout}

// Attempt states. An attempt leaves pending exactly once: its own
// goroutine got an answer or an error (done), its timeout fired (timedOut),
// or its call stopped wanting it (abandoned). Whoever moves it out of
// pending decides how it ends.
const (
	attemptPending int32 = iota
	attemptDone
	attemptTimedOut
	attemptAbandoned
)

// attempt is one request to one node on behalf of a call.
type attempt struct {
	p          *Pool
	call       *callState
	pk         picked
	kind       attemptKind
	class      string
	req        *http.Request
	parent     context.Context // the call's
	cancel     context.CancelFunc
	timeout    time.Duration // 0: only the call's deadline
	hedgeDelay time.Duration // 0: no hedge after this attempt
	stopTimer  func() bool   // nil without a timeout
	state      atomic.Int32
	// running: in its call's live attempts and not given up by its
	// timeout; guarded by call.mu (see callState.timeOut).
	running bool
	// Only the attempt's own goroutine touches these (runSafe reads them
	// after a panic): the answer whose body is open, and what the attempt
	// still holds of its node.
	open *http.Response
	hold holding
}

// holding is what an attempt holds of its node, for runSafe to give back
// after a panic.
type holding int

const (
	holdPick   holding = iota // the pick, with no verdict yet: release it
	holdAnswer                // settled as answered: outstanding until the body's close
	holdNone                  // given back, or handed to the answer's reader
)

// attemptResult is what an attempt reports to its call.
type attemptResult struct {
	a *attempt
	// resp is the node's answer (any status) with its first byte read, or
	// nil when err says why there is none.
	resp *http.Response
	err  error
	fail failureKind // failNone for a usable answer or an attempt given up
	// refused: the answer is a 429 (the node is full; not a failure).
	refused bool
}

// good reports whether the result ends the call: an answer that is not a
// 5xx or a 429 (a 4xx is the caller's problem and final).
func (r attemptResult) good() bool {
	return r.resp != nil && r.resp.StatusCode < 500 && r.resp.StatusCode != http.StatusTooManyRequests
}

// start arms the timeout and runs the attempt; the result goes to results.
func (a *attempt) start(results chan<- attemptResult) {
	if a.timeout > 0 {
		a.stopTimer = a.p.afterSafe(a.timeout, timerAttemptTimeout, a.expire, a.expired)
	}
	go func() { results <- a.runSafe() }()
}

// runSafe is run with a panic in it — of the transport, of a body
// reader, of the pool's own code — caught, so that it cannot end the
// process (the HTTP server's recover covers only its handlers' own
// goroutines). A panicked attempt fails with ErrAttemptPanic: logged once
// with its stack, counted in levee_upstream_attempt_panics_total, its
// answer's body closed, and its node released without a verdict (the
// bug is not the node's: no breaker, outlier or failure count sees it).
// It is not retried — a retry would most likely meet the same bug on
// another node, at the retry budget's cost — but the call's other
// attempts in flight (a hedge) may still answer it.
func (a *attempt) runSafe() (r attemptResult) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		p, n := a.p, a.pk.n
		p.panics.Add(1)
		p.log.Error("upstream: attempt panicked", "node", n.addr, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if a.open != nil {
			closeQuietly(a.open.Body)
		}
		a.state.CompareAndSwap(attemptPending, attemptDone)
		a.stop()
		a.cancel()
		switch a.hold {
		case holdPick:
			p.release(a.pk)
		case holdAnswer:
			// The node counted it outstanding until the body's close,
			// which will never come.
			n.inflight.Add(-1)
		}
		r = attemptResult{a: a, err: fmt.Errorf("%w: %s: %v", ErrAttemptPanic, n.addr, v)}
	}()
	return a.run()
}

// closeQuietly closes c, ignoring a panic of its own: it runs after one.
func closeQuietly(c io.Closer) {
	defer func() { _ = recover() }()
	_ = c.Close()
}

// expire is the attempt timeout firing. The attempt is abandoned only
// when something can take its place: another attempt of the call still
// running, or a retry (see callState.timeOut). Otherwise it runs on
// until the caller's deadline: a slow answer beats none.
func (a *attempt) expire() {
	if a.call.timeOut(a) {
		a.cancel()
	}
}

// expired is what a panic in expire leaves to do: an attempt it moved to
// timed out is cancelled (its call was told something takes its place);
// one still pending runs on, as if nothing could replace it.
func (a *attempt) expired() {
	if a.state.Load() == attemptTimedOut {
		a.cancel()
	}
}

// stop disarms the attempt timeout.
func (a *attempt) stop() {
	if a.stopTimer != nil {
		a.stopTimer()
	}
}

// abandon gives the attempt up (another attempt won, or the caller left):
// its request is cancelled, so the node sees the disconnect. An attempt
// that already has its answer is left to its result's reader.
func (a *attempt) abandon() {
	if a.state.CompareAndSwap(attemptPending, attemptAbandoned) {
		a.cancel()
	}
}

func (a *attempt) run() attemptResult {
	p, n := a.p, a.pk.n
	n.requests.Add(1)
	start := time.Now()
	resp, err := p.roundTrip(a.req)
	a.open = resp
	var ahead []byte
	if err == nil {
		if ahead, err = readFirst(resp); err != nil {
			a.open = nil
			resp = nil
		}
	}
	elapsed := time.Since(start)
	if err == nil && !a.state.CompareAndSwap(attemptPending, attemptDone) {
		// Timed out or abandoned just as the answer came: not used.
		a.open = nil
		resp.Body.Close()
		resp, err = nil, context.Canceled
	}
	if resp == nil {
		a.state.CompareAndSwap(attemptPending, attemptDone)
		a.stop()
		defer a.cancel()
		switch {
		case a.state.Load() == attemptTimedOut:
			p.settle(a, failTimeout, 0)
			return attemptResult{a: a, err: fmt.Errorf("%w: %s: no answer within %v", ErrAttemptTimeout, n.addr, a.timeout), fail: failTimeout}
		case a.state.Load() == attemptAbandoned || a.parent.Err() != nil:
			// Given up by the call or the caller: says nothing about the node.
			p.release(a.pk)
			a.hold = holdNone
			cause := a.parent.Err()
			if cause == nil {
				cause = context.Canceled
			}
			return attemptResult{a: a, err: fmt.Errorf("upstream %s: %w", n.addr, cause)}
		default:
			p.settle(a, failConnect, 0)
			return attemptResult{a: a, err: fmt.Errorf("%w: %s: %w", ErrConn, n.addr, err), fail: failConnect}
		}
	}
	a.stop()
	p.latency.Observe(elapsed.Seconds())
	fail, sample := failNone, elapsed
	switch {
	case resp.StatusCode >= 500:
		fail, sample = failStatus, 0
	case resp.StatusCode == http.StatusTooManyRequests:
		sample = 0 // a refusal's speed says nothing about service time
	}
	p.settle(a, fail, sample)
	resp.Body = &answerBody{rc: resp.Body, ahead: ahead, n: n, cancel: a.cancel}
	a.open, a.hold = nil, holdNone // its reader closes it now
	return attemptResult{a: a, resp: resp, fail: fail, refused: resp.StatusCode == http.StatusTooManyRequests}
}

// settle records an attempt's verdict: breaker, outlier stats, latency
// (sample > 0). A failed attempt no longer holds its node; an answered
// one does until its body is closed.
func (p *Pool) settle(a *attempt, fail failureKind, sample time.Duration) {
	a.hold = holdAnswer
	if fail == failConnect || fail == failTimeout {
		a.hold = holdNone
	}
	n := a.pk.n
	failed := fail != failNone
	if failed {
		n.failures.Add(1)
		n.fails[fail].Add(1)
		if fail != failStatus {
			n.inflight.Add(-1)
		}
	}
	if p.breakerOn.Load() {
		n.breaker.Record(a.pk.gen, failed)
	}
	consecutive := n.stats.record(p.clock.Now(), a.class, failed, sample)
	p.outliers.observe(n, a.pk.probe, failed, consecutive)
}

// release undoes a pick that got no verdict: the outstanding count, the
// breaker admission and the probe slot.
func (p *Pool) release(pk picked) {
	pk.n.inflight.Add(-1)
	if p.breakerOn.Load() {
		// No outcome is recorded; a half-open probe slot is freed.
		pk.n.breaker.unadmit(pk.gen)
	}
	if pk.probe {
		p.outliers.releaseProbe(pk.n)
	}
}

// maxCommentAhead bounds the SSE comment bytes an attempt reads ahead
// waiting for its first event (readFirst): past it, the answer counts as
// begun.
const maxCommentAhead = 64 << 10

// readFirst waits for the beginning of an answer, so that an attempt
// counts as answered only when the node produced something: its first
// byte, or for an SSE stream (Content-Type text/event-stream) the first
// byte of a line other than a comment (": PROCESSING", ": keep-alive",
// which vLLM and OpenRouter send while the request waits) or a blank
// line — a stream's first token, not its headers or keep-alives. It
// returns what it read (empty: the body was empty), to be read again
// before the rest. On error the body is closed.
func readFirst(resp *http.Response) ([]byte, error) {
	sse := isEventStream(resp.Header.Get("Content-Type"))
	var ahead []byte
	var buf [512]byte
	lineStart, comment := true, false
	for {
		p := buf[:]
		if !sse {
			p = buf[:1]
		}
		k, err := resp.Body.Read(p)
		for _, c := range p[:k] {
			if !sse || len(ahead) >= maxCommentAhead {
				return append(ahead, p[:k]...), nil
			}
			switch {
			case lineStart && c == ':':
				comment, lineStart = true, false
			case c == '\n':
				comment, lineStart = false, true
			case lineStart && c == '\r':
				// a blank line's "\r\n"
			case !comment:
				return append(ahead, p[:k]...), nil
			default:
				lineStart = false
			}
		}
		ahead = append(ahead, p[:k]...)
		if err == io.EOF {
			return ahead, nil
		}
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// answerBody is an answered attempt's body: the bytes read ahead first,
// then the rest. Close releases the node's outstanding count and the
// attempt's context once.
type answerBody struct {
	rc     io.ReadCloser
	ahead  []byte // read ahead, not yet returned
	n      *node
	cancel context.CancelFunc
	once   sync.Once
}

// Read returns the bytes read ahead on their own, so a stream's first
// event is never held back waiting for more.
func (b *answerBody) Read(p []byte) (int, error) {
	if len(b.ahead) > 0 {
		k := copy(p, b.ahead)
		b.ahead = b.ahead[k:]
		return k, nil
	}
	return b.rc.Read(p)
}

func (b *answerBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() {
		b.n.inflight.Add(-1)
		b.cancel()
	})
	return err
}
