package plan

import (
	"fmt"
	"math"
	"time"
)

// z99 is the standard normal's 99th percentile: a lognormal with median m
// and 99th percentile p has sigma = ln(p/m) / z99 (as the fake model fits it).
const z99 = 2.3263478740408408

// Sizing is the arithmetic of the seed articles on one set of inputs. Each
// part has Need: "" when it was computed, else the inputs it lacks.
type Sizing struct {
	Slots   Slots
	Service Service
	Safe    Safe      // seed 000
	For     ForTarget // seed 001
	Limit   Limit     // seed 002
	Queue   Queue
	Tokens  Tokens // seed 004
	Agent   Agent  // seed 004
}

// Slots is C, the calls the model tier serves at once.
type Slots struct {
	Need         string
	Nodes, Per   int
	C            int
	NodesDefault bool // the node count was not given: 1 assumed
}

// Service is T, the mean service time, and how it was found.
type Service struct {
	Need string
	T    time.Duration
	// How: "given", "lognormal" (from p50 and p99) or "p50" (the median
	// stands in for the mean: no mean and no p99 known).
	How string
}

// Safe is seed 000: QPS_safe = C / T.
type Safe struct {
	Need string
	QPS  float64 // req/s
}

// ForTarget is seed 001: the slots (and nodes) a target load needs,
// ⌈target × T⌉.
type ForTarget struct {
	Need   string
	Target float64 // req/s
	Slots  int
	Nodes  int // ⌈Slots / slots per node⌉; 0 when slots per node is unknown
	// Share is C / Slots: the part of the target the present slots serve
	// (0 when C is unknown).
	Share float64
}

// Limit is seed 002: limit = QPS × P99 / N per gateway, with QPS the load
// the backend can serve (QPS_safe), and with the target when that is more.
type Limit struct {
	Need     string
	QPS      float64 // QPS_safe, or the target when QPS_safe is unknown
	QPSIs    string  // "QPS_safe" or "target"
	N        int
	P99      time.Duration
	Raw      float64 // QPS × P99 / N
	Limit    int     // ⌈Raw⌉
	Little   float64 // QPS × T / N: what is in service on average (Little's law)
	PerSlots float64 // C / N: each gateway's share of the slots (0 if C unknown)
	// AtTarget is the same formula at the target load when the target is
	// above QPS_safe: what sizing for the arrivals would give.
	AtTarget float64
}

// Queue bounds the wait queue for a latency budget: a call may wait at most
// budget − p99 (else even a fast-enough service finishes too late), and no
// more calls should wait than the backend can start in that time,
// QPS_safe × timeout / N.
type Queue struct {
	Need    string
	Budget  time.Duration
	Service time.Duration // p99 (or T when p99 is unknown)
	ByP99   bool
	Timeout time.Duration // ≤ 0: no room to queue, fail fast
	Size    int           // per gateway, ⌊QPS_safe × Timeout / N⌋
}

// Tokens is the token budget: the estimated tokens (prompt + answer) of
// the calls the model tier works on at once, per gateway: C × tokens / N.
type Tokens struct {
	Need    string
	Prompt  float64
	Answer  int
	PerCall float64
	Budget  int // per gateway
}

// Agent is seed 004's amplification: one agent request is K model calls,
// so the backend serves QPS_safe / K agent requests a second (more at the
// degraded depths).
type Agent struct {
	Need                   string
	K, Yellow, Red         int
	RPS, RPSYellow, RPSRed float64
	TokensPerRequest       float64 // K × tokens per call (0 when unknown)
	CallsForTarget         float64 // target × K: model calls a second the target means
}

// Compute does the arithmetic. Inputs must be valid (Validate); it returns
// a *UsageError when no part can be computed.
func Compute(in Inputs) (Sizing, error) {
	if err := in.Validate(); err != nil {
		return Sizing{}, err
	}
	var s Sizing
	s.Slots = slots(in)
	s.Service = service(in)
	switch {
	case s.Slots.Need != "":
		s.Safe.Need = s.Slots.Need
	case s.Service.Need != "":
		s.Safe.Need = s.Service.Need
	default:
		s.Safe.QPS = float64(s.Slots.C) / s.Service.T.Seconds()
	}
	s.computeFor(in)
	s.computeLimit(in)
	s.computeQueue(in)
	s.computeTokens(in)
	s.computeAgent(in)
	if s.Safe.Need != "" && s.For.Need != "" && s.Limit.Need != "" {
		return s, errNothing
	}
	return s, nil
}

// gateways is N, the gateways sharing the load (1 when not given).
func gateways(in Inputs) int {
	if in.Gateways.Set() {
		return in.Gateways.V
	}
	return 1
}

// computeFor is seed 001: slots for the target.
func (s *Sizing) computeFor(in Inputs) {
	c, t := float64(s.Slots.C), s.Service.T.Seconds()
	switch {
	case !in.Target.Set():
		s.For.Need = "a target load (--target req/s)"
	case s.Service.Need != "":
		s.For.Need = s.Service.Need
	default:
		s.For.Target = in.Target.V
		s.For.Slots = int(math.Ceil(s.For.Target*t - 1e-9))
		if in.SlotsPerNode.Set() {
			s.For.Nodes = ceilDiv(s.For.Slots, in.SlotsPerNode.V)
		}
		if s.Slots.C > 0 && s.For.Slots > 0 {
			s.For.Share = c / float64(s.For.Slots)
		}
	}
}

// computeLimit is seed 002: the per-gateway limit.
func (s *Sizing) computeLimit(in Inputs) {
	n, safe := gateways(in), s.Safe.QPS
	c, t := float64(s.Slots.C), s.Service.T.Seconds()
	s.Limit.N = n
	s.Limit.QPS, s.Limit.QPSIs = safe, "QPS_safe"
	if safe == 0 && in.Target.Set() {
		s.Limit.QPS, s.Limit.QPSIs = in.Target.V, "target"
	}
	switch {
	case !in.P99.Set():
		s.Limit.Need = "the p99 service time (--p99)"
	case s.Limit.QPS == 0:
		s.Limit.Need = "the slots and service time (for QPS_safe) or a target load (--target)"
	default:
		s.Limit.P99 = in.P99.V
		s.Limit.Raw = s.Limit.QPS * in.P99.V.Seconds() / float64(n)
		s.Limit.Limit = int(math.Ceil(s.Limit.Raw - 1e-9))
		if s.Service.Need == "" {
			s.Limit.Little = s.Limit.QPS * t / float64(n)
		}
		if s.Slots.C > 0 {
			s.Limit.PerSlots = c / float64(n)
		}
		if in.Target.Set() && safe > 0 && in.Target.V > safe {
			s.Limit.AtTarget = in.Target.V * in.P99.V.Seconds() / float64(n)
		}
	}
}

// computeQueue sizes the queue for a latency budget.
func (s *Sizing) computeQueue(in Inputs) {
	switch {
	case !in.Budget.Set():
		s.Queue.Need = "a latency budget (--budget)"
	case s.Safe.Need != "":
		s.Queue.Need = s.Safe.Need
	default:
		s.Queue.Budget = in.Budget.V
		s.Queue.Service, s.Queue.ByP99 = s.Service.T, false
		if in.P99.Set() {
			s.Queue.Service, s.Queue.ByP99 = in.P99.V, true
		}
		s.Queue.Timeout = in.Budget.V - s.Queue.Service
		if s.Queue.Timeout > 0 {
			s.Queue.Size = int(math.Floor(s.Safe.QPS*s.Queue.Timeout.Seconds()/float64(gateways(in)) + 1e-9))
		}
	}
}

// computeTokens sizes the token budget.
func (s *Sizing) computeTokens(in Inputs) {
	switch {
	case !in.PromptTokens.Set() && !in.MaxTokens.Set():
		s.Tokens.Need = "the tokens per call (--prompt-tokens, --max-tokens)"
	case s.Slots.Need != "":
		s.Tokens.Need = s.Slots.Need
	default:
		s.Tokens.Prompt, s.Tokens.Answer = in.PromptTokens.V, in.MaxTokens.V
		s.Tokens.PerCall = s.Tokens.Prompt + float64(s.Tokens.Answer)
		s.Tokens.Budget = int(math.Ceil(float64(s.Slots.C)*s.Tokens.PerCall/float64(gateways(in)) - 1e-9))
	}
}

// computeAgent is seed 004's amplification.
func (s *Sizing) computeAgent(in Inputs) {
	safe := s.Safe.QPS
	switch {
	case !in.SubTasks.Set():
		s.Agent.Need = "the sub-tasks per agent request (--subtasks)"
	case s.Safe.Need != "":
		s.Agent.Need = s.Safe.Need
	default:
		k := in.SubTasks.V
		s.Agent.K = k
		s.Agent.Yellow, s.Agent.Red = min(depth(in.YellowSubTasks, k), k), min(depth(in.RedSubTasks, k), k)
		s.Agent.RPS = safe / float64(k)
		s.Agent.RPSYellow = safe / float64(s.Agent.Yellow)
		s.Agent.RPSRed = safe / float64(s.Agent.Red)
		if s.Tokens.Need == "" {
			s.Agent.TokensPerRequest = float64(k) * s.Tokens.PerCall
		}
		if in.Target.Set() {
			s.Agent.CallsForTarget = in.Target.V * float64(k)
		}
	}
}

// depth is a degraded depth, K itself when unknown.
func depth(d Known[int], k int) int {
	if d.Set() {
		return d.V
	}
	return k
}

func slots(in Inputs) Slots {
	if !in.SlotsPerNode.Set() {
		return Slots{Need: "the model's slots (--slots)"}
	}
	s := Slots{Nodes: 1, Per: in.SlotsPerNode.V, NodesDefault: !in.Nodes.Set()}
	if in.Nodes.Set() {
		s.Nodes = in.Nodes.V
	}
	s.C = s.Nodes * s.Per
	return s
}

func service(in Inputs) Service {
	switch {
	case in.Mean.Set():
		return Service{T: in.Mean.V, How: "given"}
	case in.P50.Set() && in.P99.Set():
		return Service{T: LognormalMean(in.P50.V, in.P99.V), How: "lognormal"}
	case in.P50.Set():
		return Service{T: in.P50.V, How: "p50"}
	}
	return Service{Need: "the service time (--mean, or --p50 and --p99)"}
}

// LognormalMean is the mean of the lognormal with median p50 and 99th
// percentile p99: p50 × exp(sigma² / 2), sigma = ln(p99 / p50) / z99.
// The result is only meaningful when it fits a Duration: Validate rejects
// p50 and p99 whose mean passes MaxDuration.
func LognormalMean(p50, p99 time.Duration) time.Duration {
	return time.Duration(lognormalMeanNanos(p50, p99))
}

// lognormalMeanNanos is LognormalMean in float64 nanoseconds: it cannot
// wrap around (a huge spread gives +Inf).
func lognormalMeanNanos(p50, p99 time.Duration) float64 {
	sigma := math.Log(float64(p99)/float64(p50)) / z99
	return float64(p50) * math.Exp(sigma*sigma/2)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// String is a one-line digest, for test failures.
func (s Sizing) String() string {
	return fmt.Sprintf("C=%d T=%s safe=%.3f slots-for=%d limit=%.3f queue=%s/%d tokens=%d agent=%.3f",
		s.Slots.C, s.Service.T, s.Safe.QPS, s.For.Slots, s.Limit.Raw, s.Queue.Timeout, s.Queue.Size, s.Tokens.Budget, s.Agent.RPS)
}
