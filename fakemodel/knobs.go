package fakemodel

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/pressure"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/yamlstrict"
)

// Latency distributions (the wire names).
const (
	DistLognormal = wire.DistLognormal
	DistFixed     = wire.DistFixed
	DistUniform   = wire.DistUniform
)

// Overflow policies: what a node does with a request when every slot is busy.
const (
	// OverflowQueue waits in an unbounded FIFO. Queued requests keep
	// waiting even after their client gave up (unless AbortOnDisconnect),
	// which is what makes congestion collapse real.
	OverflowQueue = wire.OverflowQueue
	// OverflowBounded waits in a FIFO of at most QueueSize, then 429.
	OverflowBounded = wire.OverflowBounded
	// OverflowReject answers 429 at once, like hosted APIs.
	OverflowReject = wire.OverflowReject
)

// maxMs bounds every millisecond knob (10 minutes).
const maxMs = 600_000

// Latency is the base service-time distribution of a node.
type Latency struct {
	// Dist is lognormal, fixed or uniform.
	Dist string
	// P50Ms and P99Ms fit the lognormal: mu = ln p50, sigma =
	// (ln p99 − ln p50) / 2.3263. 0 < P50Ms ≤ P99Ms ≤ 600000.
	P50Ms float64
	P99Ms float64
	// FixedMs is the service time of the fixed distribution. 0..600000.
	FixedMs float64
	// MinMs and MaxMs bound the uniform distribution. 0 ≤ MinMs ≤ MaxMs ≤ 600000.
	MinMs float64
	MaxMs float64
}

// Knobs are everything a node can be told at run time. The zero value is
// not valid; start from DefaultKnobs. Knobs hold no references, so a copy is
// a deep copy. Their JSON and YAML form is wire.KnobPatch with every knob
// set (see AsPatch and Apply); the knob names are wire's.
type Knobs struct {
	Latency Latency
	// LatencyMultiplier scales the sampled latency, the TTFT and the time
	// between streamed tokens (a "slow model" fault sets it to 3: plain
	// answers and streams alike take three times as long). 0..100.
	LatencyMultiplier float64
	// LatencyAddMs is added to every sampled latency and TTFT. 0..600000.
	LatencyAddMs float64
	// TTFTMs is a stream's time to first token (before multiplier, add and
	// slow-down). 0..600000.
	TTFTMs float64
	// TokensPerS is a stream's token rate after the first token. (0, 100000].
	// A tiny rate stalls the stream: the schedule saturates, never wraps.
	TokensPerS float64
	// MsPer1kTokens adds service time per 1000 prompt+completion tokens,
	// to streams too: a stream's prompt tokens delay its first token
	// (prefill) and each streamed token takes MsPer1kTokens/1000 ms more
	// (decode). 0..600000.
	MsPer1kTokens float64
	// Slots is the number of requests served at once (C_max). 1..100000.
	Slots int
	// Overflow is queue, bounded or reject (see the Overflow constants).
	Overflow string
	// QueueSize bounds the wait queue of the bounded policy. 0..1000000.
	QueueSize int
	// Slowdown inflates service time as slots fill, like batched GPU
	// inference: time × (1 + Slowdown × busy/slots). 0..100.
	Slowdown float64
	// HangRate is the share of served requests that hold their slot and
	// never answer until the client gives up. ErrorRate is the share of
	// the requests that do not hang answered 500 after their service time:
	// the two are drawn independently (hang first), so a node shows hangs
	// at HangRate and errors at ErrorRate × (1 − HangRate). Each 0..1, any
	// combination (node_hang and model_errors can be on together).
	ErrorRate float64
	HangRate  float64
	// AbortOnDisconnect stops queued and in-service work as soon as the
	// client leaves. Off, the node does the work anyway and counts it in
	// levee_fakemodel_wasted_seconds_total.
	AbortOnDisconnect bool
	// AnswerTokens is the natural length of an answer: a request whose
	// max_tokens (DefaultCompletionTokens when unset) is smaller gets
	// max_tokens tokens and finish_reason "length", else AnswerTokens and
	// "stop". 0 means the model would never stop on its own: every answer
	// runs to max_tokens. 0..openai.MaxTokensCeiling (a node whose --max-tokens
	// is raised can give answers that long).
	AnswerTokens int

	// Backpressure holds the watermarks past which the node sends
	// wire.HeaderBackpressure on its answers (seed 004).
	Backpressure Backpressure

	// Config is in-node GC and CPU pressure (flat in JSON and YAML).
	pressure.Config
}

// Backpressure are a node's backpressure watermarks; a zero watermark is
// off. While any is met (or Force is on) every answer carries
// wire.HeaderBackpressure naming the reasons.
type Backpressure struct {
	// Queue: requests waiting for a slot. 0..1000000.
	Queue int
	// HeapMB: the process's live heap. 0..1000000.
	HeapMB float64
	// CPU: the process's CPU time over the last quarter second as a share
	// of its CPUs (GOMAXPROCS). 0..1.
	CPU float64
	// Force sends the signal on every answer (chaos, tests).
	Force bool
}

// DefaultKnobs are the lab defaults, chosen to run well on a 2-core laptop:
//
//   - lognormal p50 200 ms, p99 600 ms (mean ≈ 224 ms): long enough that
//     slots, not the CPU, are the bottleneck, with a real tail. Seed 000's
//     figure (mean 1.2 s, p99 1.5 s) would need 5× the concurrency — and 5×
//     the goroutines and sockets in the load generator — for the same load.
//   - 16 slots per node, overflow queue: 3 nodes ≈ 3×16/0.224 ≈ 215 req/s of
//     capacity, so a 10× overload (~2,000 req/s offered) is still something
//     the generator on the same 2 cores can offer without collapsing itself.
//     The unbounded queue is what an unprotected server does.
//   - streams: TTFT 200 ms then 50 tokens/s.
//   - ms_per_1k_tokens 0, slowdown 0: service time does not depend on the
//     request, so capacity = nodes × slots / mean holds exactly until an
//     experiment turns these on.
//   - abort_on_disconnect off: work for clients that left is still done (and
//     counted as wasted), as in a naive server.
//   - answers are 256 tokens long when max_tokens allows it: the lab's
//     usual max_tokens (64) cuts them ("length"), a generous one does not
//     ("stop"), and the gateway's token budget refunds what was reserved
//     but not used.
//   - no backpressure watermark: a node signals only when told to.
func DefaultKnobs() Knobs {
	return Knobs{
		Latency:           Latency{Dist: DistLognormal, P50Ms: 200, P99Ms: 600, FixedMs: 200, MinMs: 100, MaxMs: 300},
		LatencyMultiplier: 1,
		TTFTMs:            200,
		TokensPerS:        50,
		Slots:             16,
		Overflow:          OverflowQueue,
		QueueSize:         64,
		AnswerTokens:      256,
	}
}

// KnobError is a knob that is missing, unknown or out of range. Field is its
// wire name (dotted for latency fields, e.g. "latency.p99_ms"), or empty
// when no knob is to blame (a body that is not one JSON knob object).
type KnobError struct {
	Field string
	Msg   string
}

// Error is "knob <field>: <msg>", or the message alone when Field is empty.
func (e *KnobError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return "knob " + e.Field + ": " + e.Msg
}

func rangeErr(field string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return &KnobError{Field: field, Msg: fmt.Sprintf("must be in [%s, %s], got %s", bound(lo), bound(hi), bound(v))}
	}
	return nil
}

// bound writes a number of a knob's range as a person writes it: a whole
// number up to 2⁵³ in digits (1000000, not %g's 1e+06), any other as %g.
func bound(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprintf("%g", v)
}

// Validate checks every knob. The error, when not nil, is a *KnobError naming
// the first bad knob and its allowed range.
func (k Knobs) Validate() error {
	if err := k.Latency.validate(); err != nil {
		return err
	}
	checks := []struct {
		field     string
		v, lo, hi float64
	}{
		{wire.KnobLatencyMultiplier, k.LatencyMultiplier, 0, 100},
		{wire.KnobLatencyAddMs, k.LatencyAddMs, 0, maxMs},
		{wire.KnobTTFTMs, k.TTFTMs, 0, maxMs},
		{wire.KnobMsPer1kTokens, k.MsPer1kTokens, 0, maxMs},
		{wire.KnobSlots, float64(k.Slots), 1, 100_000},
		{wire.KnobQueueSize, float64(k.QueueSize), 0, 1_000_000},
		{wire.KnobSlowdown, k.Slowdown, 0, 100},
		{wire.KnobErrorRate, k.ErrorRate, 0, 1},
		{wire.KnobHangRate, k.HangRate, 0, 1},
		{wire.KnobAnswerTokens, float64(k.AnswerTokens), 0, openai.MaxTokensCeiling}, // a request's max_tokens caps the answer
		{wire.KnobBackpressureQueue, float64(k.Backpressure.Queue), 0, 1_000_000},
		{wire.KnobBackpressureHeapMB, k.Backpressure.HeapMB, 0, 1_000_000},
		{wire.KnobBackpressureCPU, k.Backpressure.CPU, 0, 1},
	}
	for _, c := range checks {
		if err := rangeErr(c.field, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if math.IsNaN(k.TokensPerS) || k.TokensPerS <= 0 || k.TokensPerS > 100_000 {
		return &KnobError{Field: wire.KnobTokensPerS, Msg: fmt.Sprintf("must be in (0, 100000], got %g", k.TokensPerS)}
	}
	switch k.Overflow {
	case OverflowQueue, OverflowBounded, OverflowReject:
	default:
		return &KnobError{Field: wire.KnobOverflow, Msg: fmt.Sprintf("must be one of queue, bounded, reject; got %q", k.Overflow)}
	}
	if err := k.Config.Validate(); err != nil {
		var fe *pressure.FieldError
		if errors.As(err, &fe) {
			return &KnobError{Field: fe.Field, Msg: fe.Msg}
		}
		return fmt.Errorf("pressure knobs: %w", err)
	}
	return nil
}

func (l Latency) validate() error {
	switch l.Dist {
	case DistLognormal, DistFixed, DistUniform:
	default:
		return &KnobError{Field: latencyKnob(wire.KnobDist), Msg: fmt.Sprintf("must be one of lognormal, fixed, uniform; got %q", l.Dist)}
	}
	if err := rangeErr(latencyKnob(wire.KnobFixedMs), l.FixedMs, 0, maxMs); err != nil {
		return err
	}
	if err := rangeErr(latencyKnob(wire.KnobMinMs), l.MinMs, 0, maxMs); err != nil {
		return err
	}
	if err := rangeErr(latencyKnob(wire.KnobMaxMs), l.MaxMs, l.MinMs, maxMs); err != nil {
		return err
	}
	if math.IsNaN(l.P50Ms) || l.P50Ms <= 0 || l.P50Ms > maxMs {
		return &KnobError{Field: latencyKnob(wire.KnobP50Ms), Msg: fmt.Sprintf("must be in (0, %d], got %g", maxMs, l.P50Ms)}
	}
	return rangeErr(latencyKnob(wire.KnobP99Ms), l.P99Ms, l.P50Ms, maxMs)
}

// MeanService is the configured mean service time of a non-stream request:
// the distribution's mean × LatencyMultiplier + LatencyAddMs. It leaves out
// MsPer1kTokens (request-dependent) and Slowdown (load-dependent; at
// saturation the mean becomes MeanService × (1 + Slowdown)). Capacity of a
// node is Slots / MeanService. The distribution's mean is that of the
// capped draws Sample makes (Latency.MeanMs), and the result saturates at
// the largest Duration instead of overflowing.
func (k Knobs) MeanService() time.Duration {
	return msDuration(k.Latency.MeanMs()*k.LatencyMultiplier + k.LatencyAddMs)
}

// ServiceTime turns a base sample into the time a request holds its slot:
// (base × LatencyMultiplier + LatencyAddMs + tokens × MsPer1kTokens/1000) ×
// (1 + Slowdown × busy/Slots), where busy counts the requests in service,
// this one included.
func (k Knobs) ServiceTime(base time.Duration, tokens, busy int) time.Duration {
	ms := float64(base)/float64(time.Millisecond)*k.LatencyMultiplier + k.LatencyAddMs +
		float64(tokens)*k.MsPer1kTokens/1000
	return msDuration(ms * k.loadFactor(busy))
}

func (k Knobs) loadFactor(busy int) float64 {
	if k.Slots <= 0 {
		return 1
	}
	return 1 + k.Slowdown*float64(busy)/float64(k.Slots)
}

// fate draws what befalls a request that got its slot: it hangs with
// probability HangRate, and one that does not hang fails (500) with
// probability ErrorRate, drawn independently. r may be nil to use the
// global, concurrency-safe source.
func (k Knobs) fate(r *rand.Rand) (hang, fail bool) {
	if uniform(r) < k.HangRate {
		return true, false
	}
	return false, uniform(r) < k.ErrorRate
}

// TTFT is the time to first token of a stream with promptTokens under load
// busy: (TTFTMs × LatencyMultiplier + LatencyAddMs + promptTokens ×
// MsPer1kTokens/1000) × (1 + Slowdown × busy/Slots).
func (k Knobs) TTFT(busy, promptTokens int) time.Duration {
	ms := k.TTFTMs*k.LatencyMultiplier + k.LatencyAddMs + float64(promptTokens)*k.MsPer1kTokens/1000
	return msDuration(ms * k.loadFactor(busy))
}

// TokenInterval is the time between two streamed tokens under load busy:
// (1 s / TokensPerS × LatencyMultiplier + MsPer1kTokens/1000 ms) ×
// (1 + Slowdown × busy/Slots),
// so a stream's prompt and completion tokens cost what they cost a plain
// answer (ServiceTime). A rate so low that the interval passes the largest
// Duration (about 292 years) saturates there: the stream stalls after its
// first token, it never speeds up.
func (k Knobs) TokenInterval(busy int) time.Duration {
	ns := float64(time.Second)/k.TokensPerS*k.LatencyMultiplier + k.MsPer1kTokens*float64(time.Millisecond)/1000
	return nsDuration(ns * k.loadFactor(busy))
}

// tokenDue is when a stream's token i is due after its start: ttft + i ×
// every, saturating at the largest Duration instead of overflowing.
func tokenDue(ttft, every time.Duration, i int) time.Duration {
	if i <= 0 || every <= 0 {
		return ttft
	}
	if every > (math.MaxInt64-ttft)/time.Duration(i) {
		return math.MaxInt64
	}
	return ttft + time.Duration(i)*every
}

// Patch applies a partial JSON knob object (a wire.KnobPatch) onto a copy
// of k, validates the result and returns it; k itself never changes.
// Unknown knobs (a name not exactly the wire's, "SLOTS" included), a knob
// named twice, wrong types and out-of-range values are *KnobError.
func (k Knobs) Patch(patch []byte) (Knobs, error) {
	p, err := decodeKnobPatch(patch)
	if err != nil {
		return k, err
	}
	next := k.Apply(p)
	if err := next.Validate(); err != nil {
		return k, err
	}
	return next, nil
}

// LoadKnobsYAML decodes a YAML knob document (a wire.KnobPatch) onto a copy
// of base (so a file may name only the knobs it changes), and validates.
// Unknown keys, a second YAML document and a fraction in an integer knob
// (slots: 2.5) are errors naming the line (yamlstrict.Decode); an empty
// document changes nothing. On error base is returned unchanged.
func LoadKnobsYAML(r io.Reader, base Knobs) (Knobs, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return base, fmt.Errorf("knobs YAML: %w", err)
	}
	var p wire.KnobPatch
	if _, err := yamlstrict.Decode(b, &p); err != nil && !errors.Is(err, io.EOF) {
		return base, fmt.Errorf("knobs YAML: %w", err)
	}
	next := base.Apply(p)
	if err := next.Validate(); err != nil {
		return base, err
	}
	return next, nil
}
