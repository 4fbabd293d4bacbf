package gateway

import (
	"errors"
	"net/http"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
)

// errAnswered says the request was answered already: its wait for a
// place again failed and it was shed (see callModelRequeued).
var errAnswered = errors.New("gateway: answered while waiting for a place again")

// callModelRequeued is callModel for x, which holds permit: a call that no
// node took waits for a place and goes again (see requeue) as long as it
// may, *start moving to each new call's start. When the wait fails, or
// the refusal stands once the deadline has passed (a timeout), x is
// answered with that shed and the error is errAnswered.
func (g *Gateway) callModelRequeued(x *exchange, permit *admit.Permit, class, path string, body []byte, start *time.Time) (*http.Response, callResult, wire.Outcome, error) {
	resp, res, o, err := g.callModel(x.ctx, x.id.Priority, class, path, body)
	for err != nil && res.refused {
		again, s := g.requeue(x, permit, res)
		if s != nil {
			x.shed(s)
			return nil, callResult{}, wire.OutcomeError, errAnswered
		}
		if !again {
			break
		}
		*start = time.Now()
		resp, res, o, err = g.callModel(x.ctx, x.id.Priority, class, path, body)
	}
	return resp, res, o, err
}

// requeue puts a call that no node took (see callResult.refused) back
// into its class's bulkhead queue instead of failing it: every node was
// full a moment ago, so the request waits for one of the requests in
// flight to end and then for a place, first of its priority (see
// admit.Bulkhead.Requeue), within its deadline. That wait is free: the
// backends' own completions pace the calls that go again, so they add
// nothing to an overload, and a P0 call sent as a capacity cut leaves
// every node full waits for the nodes to drain instead of failing once
// the retry budget is spent (traced in the simulation: 3 × 64 slots
// answering 429, cut to 16 each: 17 P0 calls failed in the 30 ms after
// the cut, P0 99.63 %). With nothing else in flight the call would go
// straight back: that costs a retry token (payRequeue).
// The refusal also tells an adaptive limit that the backends took no
// more (res is released on permit as a dropped sample). It returns true
// when x holds a place again (permit) and the call is to be sent again;
// false with a nil shed when the refusal stands (retries off, or nothing
// in flight and no retry token: permit is given back then), false with
// the shed when the wait failed (queue full or timeout, deadline) or the
// refusal stands once the deadline has passed: x is to be answered with
// it (permit given back).
//
// A refusal that stands is judged here, once, by the deadline as it
// stands (refusalStands): one that callModel judged before the deadline
// can stand after it — the deadline passing in the moment between — and
// is then a timeout, as a failure that came as the deadline passed is.
func (g *Gateway) requeue(x *exchange, permit *admit.Permit, res callResult) (bool, *shed) {
	if !res.refused {
		return false, nil
	}
	if !g.pool.Requeues() || deadlinePassed(x.ctx, time.Now()) {
		return false, g.refusalStands(x, permit, res) // nothing to wait for
	}
	class := routeClass[x.route]
	start := time.Now()
	prio := int(x.id.Priority)
	p, err := g.bulkheads[class].Requeue(x.ctx, x.id.Priority, permit, res.sample(), func() bool { return g.payRequeue(prio, res) })
	if errors.Is(err, admit.ErrNotRequeued) {
		return false, g.refusalStands(x, permit, res)
	}
	wait := time.Since(start)
	g.m.queueWait[class].Observe(wait.Seconds())
	g.noteQueueWait(class, wait, err)
	if err != nil {
		return false, g.acquireShed(class, err)
	}
	*permit = p
	return true, nil
}

// payRequeue reports whether a call that no node took (res), with
// nothing in flight whose end could pace it, goes straight back, and takes
// the retry token of prio for it (upstream.Pool.TryRequeue). A refusal
// that said when to come back (Retry-After: OpenAI's rate limit, a
// proxy's 429, the fake model's full node) does not: the backend said it
// has no room before then, so the refusal stands and the client gets the
// Retry-After with the 502. Sent again at once, a backend that said "in
// 7 s" got the call again within a millisecond, as often as the retry
// budget allowed; holding the request that long instead would be a queue
// the client did not ask for.
func (g *Gateway) payRequeue(prio int, res callResult) bool {
	return res.retryAfter <= 0 && g.pool.TryRequeue(prio)
}

// refusalStands judges a refusal that goes no further (see requeue) by
// x's deadline now: nil (an upstream error, the caller's to answer) while
// the deadline is ahead; once it has passed, or x's context ended, the
// shed of a timeout (504 deadline_exceeded), permit given back with res.
func (g *Gateway) refusalStands(x *exchange, permit *admit.Permit, res callResult) *shed {
	if !deadlinePassed(x.ctx, time.Now()) {
		return nil
	}
	permit.Release(res.sample()) // a no-op when Requeue gave it back
	return &shed{outcome: wire.OutcomeTimeout, status: http.StatusGatewayTimeout, msg: "deadline passed as every node refused the call (429)"}
}

// noteQueueWait feeds the class's queue-wait mean (the Retry-After of its
// queue sheds) with one wait that ended with a slot (err nil) or at the
// queue timeout. A refusal at a full queue did not wait for its place,
// and a request whose deadline passed or whose client left says nothing
// about how the queue moves: neither counts.
func (g *Gateway) noteQueueWait(class classID, wait time.Duration, err error) {
	if err == nil || errors.Is(err, admit.ErrQueueTimeout) {
		g.queueWaits[class].observe(wait)
	}
}

// acquireShed is the shed for a failed wait in class's bulkhead queue,
// with the Retry-After of the class's recent queue waits.
func (g *Gateway) acquireShed(class classID, err error) *shed {
	switch {
	case errors.Is(err, admit.ErrQueueFull):
		return &shed{outcome: wire.OutcomeShedQueueFull, status: http.StatusServiceUnavailable, retryAfter: retryAfterOf(&g.queueWaits[class]), msg: class.String() + " queue full"}
	case errors.Is(err, admit.ErrQueueTimeout):
		return &shed{outcome: wire.OutcomeShedQueueTimeout, status: http.StatusServiceUnavailable, retryAfter: retryAfterOf(&g.queueWaits[class]), msg: class.String() + " queue timeout"}
	default: // the request's deadline passed or the client left while queued
		return &shed{outcome: wire.OutcomeTimeout, status: http.StatusGatewayTimeout, msg: "deadline passed while queued"}
	}
}
