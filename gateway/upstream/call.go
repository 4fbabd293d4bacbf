package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// DeadlineHeader carries the call's remaining time to the node, in whole
// milliseconds rounded down, at least 1.
const DeadlineHeader = wire.HeaderDeadlineMs

// Call is one request for the pool to answer.
type Call struct {
	Method string
	// Path starts with /; it is appended to the node's base URL.
	Path string
	// Body is a byte slice so that a retry or a hedge can resend it.
	Body []byte
	// Header is copied, never modified.
	Header http.Header
	// Priority: HighestPriority (0, P0) to LowestPriority (2, P2). It
	// decides the retry budget's pot, hedging and probe duty.
	Priority int
	// Class groups calls of similar latency (e.g. "predict",
	// "chat_stream"): attempt timeouts and hedge delays come from the
	// latencies of the same class. Empty: "default".
	Class string
}

// Do sends a call of the lowest priority and no class; see Send.
func (p *Pool) Do(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, error) {
	return p.Send(ctx, Call{Method: method, Path: path, Body: body, Header: header, Priority: LowestPriority})
}

// Send answers c from the node with the fewest outstanding requests whose
// breaker admits it and which is in rotation (see pick), and returns the
// first good response: any status but 5xx and 429. When nothing better
// came it returns the last 5xx or 429 answer, or the last error.
//
// When ctx has a deadline, each attempt sends the remaining time as
// X-Levee-Deadline-Ms; when it is below MinServiceTime no attempt is made
// and the error is ErrDeadline. An attempt counts as answered at the first byte of the
// body — of an SSE stream, the first byte of a line that is not a comment
// (a model's ": PROCESSING" or ": keep-alive" while the request waits is
// not an answer; past 64 KiB of comments the answer counts as begun) — so
// a stream is judged by its first token.
//
// An attempt that fails (see RetryOn: connection failure, 5xx, attempt
// timeout, 429) is retried on another node while the retry budget of c's
// priority allows (P0 keeps a reserve of it). An attempt of a hedge-eligible call still unanswered
// after its hedge delay gets one hedge on another node while the hedge
// budget allows; the first good answer wins and the others are
// cancelled. Failures caused by ctx are not retried. Errors: ErrDeadline,
// ErrNoNode (also ErrBreakerOpen when breakers are to blame), ErrConn,
// ErrAttemptTimeout, or ctx's error.
//
// The node counts the request as outstanding until the returned
// response's body is closed; the caller must close it.
func (p *Pool) Send(ctx context.Context, c Call) (*http.Response, error) {
	if !strings.HasPrefix(c.Path, "/") {
		return nil, fmt.Errorf("upstream: path %q must start with /", c.Path)
	}
	if c.Class == "" {
		c.Class = defaultClass
	}
	prio := clampPriority(c.Priority)
	p.budget.Deposit()
	hedging := p.hedgeEligible(prio)
	if hedging {
		p.hedges.Deposit() // also while the retry defense is off
	}
	hedging = hedging && p.retriesOn.Load()
	s := &callState{p: p, ctx: ctx, c: c, prio: prio, hedging: hedging, results: make(chan attemptResult, len(p.nodes))}
	if hedging {
		s.hedgeDue = make(chan struct{}, 1)
	}
	return s.run()
}

// hedgeEligible reports whether a call of priority prio is of the kind
// hedged (it is hedged only while the retry defense is on).
func (p *Pool) hedgeEligible(prio int) bool {
	h := p.cfg.Hedge
	return !h.Disabled && len(p.nodes) > 1 &&
		(prio == HighestPriority || (prio == HighestPriority+1 && h.IncludeP1))
}

// callState is one Send in progress; only its goroutine touches it.
type callState struct {
	p       *Pool
	ctx     context.Context
	c       Call
	prio    int
	hedging bool // the call may still be hedged
	results chan attemptResult
	tried   []*node
	live    []*attempt // attempts in flight
	last    attemptResult
	// hedgeDue receives when the hedge delay of the attempt in flight has
	// passed (nil for a call never hedged); stopHedge disarms that timer
	// (nil when none is armed).
	hedgeDue  chan struct{}
	stopHedge func() bool
	// triedView is tried for the attempt timers' goroutines (tried only
	// grows by append, so the slice a reader loaded never changes under
	// it).
	triedView atomic.Pointer[[]*node]
	// running counts the attempts in live that no timeout gave up (see
	// attempt.running); the call's goroutine and the attempt timers'
	// share it under mu.
	mu      sync.Mutex
	running int
}

// timeOut is a's attempt timeout firing. It gives a up — moves it to
// timed out for its caller to cancel, and reports true — only when
// something can take its place: another attempt of the call still
// running (which then can no longer be given up on a's account: two
// attempts timing out together leave one running), or a retry (see
// retryPossible). Otherwise a runs on until the caller's deadline.
func (s *callState) timeOut(a *attempt) bool {
	s.mu.Lock()
	if a.running && s.running > 1 {
		defer s.mu.Unlock()
		if !a.state.CompareAndSwap(attemptPending, attemptTimedOut) {
			return false // its answer came just now
		}
		a.running = false
		s.running--
		return true
	}
	s.mu.Unlock()
	return s.retryPossible() && a.state.CompareAndSwap(attemptPending, attemptTimedOut)
}

// retryPossible reports whether an attempt of this call that timed out
// can be replaced by a retry: a retry after a timeout is allowed, a node
// a retry could go to is left (see untriedNode) and the budget has a
// token for it.
func (s *callState) retryPossible() bool {
	p := s.p
	var tried []*node
	if v := s.triedView.Load(); v != nil {
		tried = *v
	}
	return p.retriesOn.Load() && p.retryOnKind[failTimeout] &&
		p.untriedNode(tried) && p.budget.Balance(s.prio) >= 1
}

// untriedNode reports whether a node not in tried could take an attempt:
// it is up and, with breakers on, its breaker is not open. (A probing or
// ejected node counts: pick falls back to it.)
func (p *Pool) untriedNode(tried []*node) bool {
	breakerOn := p.breakerOn.Load()
	for _, n := range p.nodes {
		if n.up.Load() && !contains(tried, n) && (!breakerOn || n.breaker.State() != StateOpen) {
			return true
		}
	}
	return false
}

// retryable reports whether r's failure is retried (RetryOn): a
// failure of its kind, or a 429.
func (s *callState) retryable(r attemptResult) bool {
	p := s.p
	if !p.retriesOn.Load() {
		return false
	}
	if r.refused {
		return p.retryOnRefused
	}
	return r.fail != failNone && p.retryOnKind[r.fail]
}

// errNotSent says launch sent nothing because no retry or hedge was
// possible (no other node, or the budget said no).
var errNotSent = errors.New("upstream: not sent")

func (s *callState) run() (*http.Response, error) {
	defer s.disarmHedge()
	if _, err := s.launch(kindFirst); err != nil {
		return nil, err
	}
	for {
		select {
		case r := <-s.results:
			s.remove(r.a)
			if r.good() {
				if r.a.kind == kindHedge {
					s.p.hedgesWon.Add(1)
				}
				s.finish()
				s.closeLast()
				return r.resp, nil
			}
			s.keep(r)
			if len(s.live) > 0 {
				continue // another attempt may still answer
			}
			if !s.retryable(r) {
				return s.result()
			}
			if _, err := s.launch(kindRetry); err != nil {
				if errors.Is(err, ErrDeadline) && s.last.resp == nil {
					return nil, err
				}
				return s.result()
			}
		case <-s.hedgeDue:
			s.stopHedge = nil
			if s.hedging && len(s.live) > 0 {
				s.hedging = false // one hedge per call, sent or denied
				_, _ = s.launch(kindHedge)
			}
		case <-s.ctx.Done():
			s.finish()
			s.closeLast()
			return nil, fmt.Errorf("upstream: %w", s.ctx.Err())
		}
	}
}

// launch starts one attempt of the given kind on a node not tried yet.
// Errors: ErrDeadline (wrapping the last failure), a first attempt's pick
// or request error, or errNotSent.
func (s *callState) launch(kind attemptKind) (*attempt, error) {
	p := s.p
	deadline, hasDeadline := s.ctx.Deadline()
	var remaining time.Duration
	if hasDeadline {
		remaining = time.Until(deadline)
		if remaining <= 0 || remaining < p.cfg.MinServiceTime {
			if kind == kindHedge {
				return nil, errNotSent
			}
			p.deadlineSkips.Add(1)
			if s.last.err != nil {
				return nil, fmt.Errorf("%w (after %w)", ErrDeadline, s.last.err)
			}
			return nil, ErrDeadline
		}
	}
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	pk, err := p.pick(s.tried, s.prio)
	if err != nil {
		if kind == kindFirst {
			p.noNode.Add(1)
			return nil, err
		}
		return nil, errNotSent
	}
	switch kind {
	case kindRetry:
		if !p.withdrawRetry(s.prio) {
			p.release(pk)
			return nil, errNotSent
		}
	case kindHedge:
		if !p.hedges.TryWithdraw(HighestPriority) {
			p.hedgesDenied.Add(1)
			p.release(pk)
			return nil, errNotSent
		}
		p.hedgesSent.Add(1)
	}
	a := &attempt{p: p, call: s, pk: pk, kind: kind, class: s.c.Class, parent: s.ctx}
	if p.retriesOn.Load() {
		a.timeout, a.hedgeDelay = p.timing(pk.n, s.c.Class, remaining, hasDeadline)
	}
	if err := s.request(a, remaining, hasDeadline); err != nil {
		p.release(pk)
		return nil, err
	}
	s.tried = append(s.tried, pk.n)
	tried := s.tried
	s.triedView.Store(&tried)
	s.live = append(s.live, a)
	s.mu.Lock()
	a.running = true
	s.running++
	s.mu.Unlock()
	p.attempts[kind].Add(1)
	// The hedge timer is armed before the attempt starts, like its timeout:
	// by the time the node sees the request, both are running.
	if s.hedging && kind != kindHedge && a.hedgeDelay > 0 {
		s.disarmHedge()
		due := s.hedgeDue
		s.stopHedge = p.afterSafe(a.hedgeDelay, timerHedge, func() {
			select {
			case due <- struct{}{}:
			default: // one firing pending is enough
			}
		}, nil)
	}
	a.start(s.results)
	return a, nil
}

// disarmHedge stops the hedge timer and drops a firing not yet seen.
func (s *callState) disarmHedge() {
	if s.stopHedge != nil {
		s.stopHedge()
		s.stopHedge = nil
	}
	select {
	case <-s.hedgeDue:
	default:
	}
}

// request builds a's HTTP request under its own cancellable context.
func (s *callState) request(a *attempt, remaining time.Duration, hasDeadline bool) error {
	ctx, cancel := context.WithCancel(s.ctx)
	var body io.Reader
	if s.c.Body != nil {
		body = bytes.NewReader(s.c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, s.c.Method, a.pk.n.addr+s.c.Path, body)
	if err != nil {
		cancel()
		return fmt.Errorf("upstream: building request for %s%s: %w", a.pk.n.addr, s.c.Path, err)
	}
	if s.c.Header != nil {
		req.Header = s.c.Header.Clone()
	}
	s.p.setHeaders(req)
	// The caller's deadline, not the attempt timeout: an attempt nothing
	// can replace runs on past its timeout. Whole milliseconds, rounded
	// down, but at least 1: the header is a positive count (a levee
	// gateway answers 400 to 0), and launch sends nothing once it is past.
	if hasDeadline {
		req.Header.Set(DeadlineHeader, strconv.FormatInt(max(1, remaining.Milliseconds()), 10))
	} else {
		req.Header.Del(DeadlineHeader)
	}
	a.req, a.cancel = req, cancel
	return nil
}

func (s *callState) remove(a *attempt) {
	for i, x := range s.live {
		if x == a {
			s.live = append(s.live[:i], s.live[i+1:]...)
			s.mu.Lock()
			if a.running {
				a.running = false
				s.running--
			}
			s.mu.Unlock()
			return
		}
	}
}

// keep makes r the call's last failure, closing the answer it replaces.
func (s *callState) keep(r attemptResult) {
	if r.resp == nil && s.last.resp != nil && r.fail == failNone {
		return // an attempt given up says less than an answer
	}
	s.closeLast()
	s.last = r
}

func (s *callState) closeLast() {
	if s.last.resp != nil {
		drainClose(s.last.resp)
		s.last.resp = nil
	}
}

// result returns the last failure: an answer when there is one.
func (s *callState) result() (*http.Response, error) {
	if s.last.resp != nil {
		return s.last.resp, nil
	}
	if s.last.err != nil {
		return nil, s.last.err
	}
	return nil, ErrNoNode
}

// finish abandons the attempts still in flight and waits for them to end
// (a cancelled request ends at once), closing any answer they got without
// reading it (it may be a stream that goes on for minutes: closing cancels
// its request, so its node sees the client leave): when Send returns, only
// its own answer holds a node.
func (s *callState) finish() {
	for _, a := range s.live {
		a.abandon()
	}
	for range s.live {
		if r := <-s.results; r.resp != nil {
			r.resp.Body.Close()
		}
	}
	s.live = nil
	s.mu.Lock()
	s.running = 0
	s.mu.Unlock()
}

// drainClose reads a little of an unused answer (so its connection may be
// reused) and closes it.
func drainClose(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// Requeues reports whether a call that no node took (every node tried
// answered 429) may wait for a place and be sent again (see
// admit.Bulkhead.Requeue): retries are on and a 429 is retried (RetryOn).
// A wait for a place that a request in flight frees costs no retry token
// (the backends' completions pace it); one with nothing in flight to wait
// for pays with TryRequeue. It never blocks.
func (p *Pool) Requeues() bool { return p.retriesOn.Load() && p.retryOnRefused }

// TryRequeue reports whether a call that no node took may be sent again
// at once, with nothing in flight to wait for (see Requeues), and takes a
// retry token for it when so: Requeues and the retry budget of prio has a
// token (P0 keeps its reserve). It counts as a retry, sent or denied. It
// never blocks.
func (p *Pool) TryRequeue(prio int) bool {
	if !p.Requeues() {
		return false
	}
	return p.withdrawRetry(clampPriority(prio))
}

// withdrawRetry takes a retry token of prio from the budget and counts
// the retry, sent or denied.
func (p *Pool) withdrawRetry(prio int) bool {
	if !p.budget.TryWithdraw(prio) {
		p.retriesDenied[prio].Add(1)
		return false
	}
	p.retriesSent[prio].Add(1)
	return true
}
