package admit

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// Budget refusals. Reserve wraps neither: compare with errors.Is.
var (
	// ErrOverRequestCap: the request alone costs more than the
	// per-request cap, or than its priority may ever fill of the budget
	// (see Budget.RequestCapFor); it can never pass, whatever the load.
	ErrOverRequestCap = errors.New("admit: request cost exceeds the per-request token cap")
	// ErrBudgetFull: the budget has no room for the request's priority now.
	ErrBudgetFull = errors.New("admit: token budget exhausted for this priority")
)

// BudgetConfig shapes a token Budget: how many estimated LLM tokens may be
// in flight (seed 004's cost bucket: tokens, not requests), the most one
// request may take, and the headroom held back for the more important
// priorities so that no mix of less important requests can take it.
type BudgetConfig struct {
	// Tokens is the budget: estimated tokens in flight. ≥ 1.
	Tokens int64 `yaml:"-" json:"-"`
	// MaxRequestTokens caps one request's estimate; a request above it is
	// refused outright (ErrOverRequestCap). 0 means the P0 headroom
	// (ReserveP0 × Tokens), or Tokens when ReserveP0 is 0. It must not
	// exceed that headroom, so a lone P0 request always fits.
	MaxRequestTokens int64 `yaml:"max_request_tokens" json:"max_request_tokens"`
	// ReserveP0 is the share of the budget only P0 may use. [0, 1).
	ReserveP0 float64 `yaml:"reserve_p0" json:"reserve_p0"`
	// ReserveP1 is the share, below the P0 headroom, only P0 and P1 may
	// use: P2 fills at most 1 − ReserveP0 − ReserveP1. [0, 1 − ReserveP0).
	ReserveP1 float64 `yaml:"reserve_p1" json:"reserve_p1"`
}

// DefaultBudgetConfig holds back a quarter of the budget for P0 and a
// tenth more for P1; the per-request cap is the P0 headroom.
func DefaultBudgetConfig(tokens int64) BudgetConfig {
	return BudgetConfig{Tokens: tokens, ReserveP0: 0.25, ReserveP1: 0.10}
}

// BudgetFieldError is an invalid BudgetConfig field (its YAML name).
type BudgetFieldError struct {
	Field string
	Msg   string
}

func (e *BudgetFieldError) Error() string { return "admit: budget " + e.Field + ": " + e.Msg }

// Validate reports the first invalid field as a *BudgetFieldError.
func (c BudgetConfig) Validate() error {
	share := func(v float64) bool { return v >= 0 && v < 1 && !math.IsNaN(v) }
	switch {
	case c.Tokens < 1:
		return &BudgetFieldError{"tokens", fmt.Sprintf("must be ≥ 1 (got %d)", c.Tokens)}
	case !share(c.ReserveP0):
		return &BudgetFieldError{"reserve_p0", fmt.Sprintf("must be in [0, 1) (got %g)", c.ReserveP0)}
	case !share(c.ReserveP1) || c.ReserveP0+c.ReserveP1 >= 1:
		return &BudgetFieldError{"reserve_p1", fmt.Sprintf("must be ≥ 0 with reserve_p0 + reserve_p1 < 1 (got %g + %g)", c.ReserveP0, c.ReserveP1)}
	case c.MaxRequestTokens < 0:
		return &BudgetFieldError{"max_request_tokens", fmt.Sprintf("must be ≥ 0 (got %d)", c.MaxRequestTokens)}
	case c.MaxRequestTokens > c.headroom():
		return &BudgetFieldError{"max_request_tokens", fmt.Sprintf("must be ≤ the P0 headroom %d (reserve_p0 × tokens), so a lone P0 request always fits (got %d)", c.headroom(), c.MaxRequestTokens)}
	}
	return nil
}

// headroom is what only P0 may use (the whole budget without a reserve).
func (c BudgetConfig) headroom() int64 {
	if c.ReserveP0 <= 0 {
		return c.Tokens
	}
	return int64(math.Floor(c.ReserveP0 * float64(c.Tokens)))
}

// RequestCap is the per-request cap in force.
func (c BudgetConfig) RequestCap() int64 {
	if c.MaxRequestTokens > 0 {
		return c.MaxRequestTokens
	}
	return max(c.headroom(), 1)
}

// ceilings returns how far each priority may fill the budget.
func (c BudgetConfig) ceilings() [NumPriorities]int64 {
	t := float64(c.Tokens)
	return [NumPriorities]int64{
		c.Tokens,
		int64(math.Floor(t * (1 - c.ReserveP0))),
		int64(math.Floor(t * (1 - c.ReserveP0 - c.ReserveP1))),
	}
}

// budgetState is one immutable configuration, swapped whole.
type budgetState struct {
	cfg      BudgetConfig
	cap      int64
	ceilings [NumPriorities]int64
	caps     [NumPriorities]int64 // min(cap, ceilings[p]): the most one request of p may take
}

// Budget bounds the estimated LLM tokens of requests in flight, by
// priority: a request of priority p is admitted while the tokens in flight
// plus its own stay within p's ceiling (the budget less the headroom held
// for more important priorities), and never when it alone exceeds the
// per-request cap or p's ceiling. So whatever P1, P2 and anonymous requests do, P0 keeps
// ReserveP0 × Tokens for itself, and one request never takes the whole
// budget. Reserve and Release never block and never allocate; Budget is
// safe for concurrent use.
type Budget struct {
	inflight atomic.Int64
	state    atomic.Pointer[budgetState]
}

// NewBudget returns a budget for cfg, which must be valid (Validate);
// an invalid one is replaced by DefaultBudgetConfig(max(cfg.Tokens, 1)).
func NewBudget(cfg BudgetConfig) *Budget {
	b := &Budget{}
	if err := b.SetConfig(cfg); err != nil {
		_ = b.SetConfig(DefaultBudgetConfig(max(cfg.Tokens, 1)))
	}
	return b
}

// Reserve takes tokens for a request of priority p. It returns nil when
// they were taken (pair it with Release of the same total),
// ErrOverRequestCap when tokens exceed RequestCapFor(p) (the per-request
// cap, or p's ceiling: no load lets them pass), or ErrBudgetFull when
// p's ceiling has no room now. tokens ≤ 0 always
// succeeds and takes nothing.
func (b *Budget) Reserve(p Priority, tokens int64) error {
	if tokens <= 0 {
		return nil
	}
	st := b.state.Load()
	p = min(p, NumPriorities-1)
	if tokens > st.caps[p] {
		return ErrOverRequestCap
	}
	ceiling := st.ceilings[p]
	for {
		cur := b.inflight.Load()
		if cur+tokens > ceiling {
			return ErrBudgetFull
		}
		if b.inflight.CompareAndSwap(cur, cur+tokens) {
			return nil
		}
	}
}

// Release returns tokens taken by Reserve, all at once or in parts (an
// agent task returns each step's share as the step ends). tokens ≤ 0 does
// nothing.
func (b *Budget) Release(tokens int64) {
	if tokens <= 0 {
		return
	}
	if b.inflight.Add(-tokens) < 0 {
		// Releasing more than was reserved is a caller bug; clamp rather
		// than let the budget grow without bound.
		for {
			cur := b.inflight.Load()
			if cur >= 0 || b.inflight.CompareAndSwap(cur, 0) {
				return
			}
		}
	}
}

// Inflight reports the tokens currently reserved.
func (b *Budget) Inflight() int64 { return b.inflight.Load() }

// Capacity reports the budget.
func (b *Budget) Capacity() int64 { return b.state.Load().cfg.Tokens }

// RequestCap reports the per-request cap.
func (b *Budget) RequestCap() int64 { return b.state.Load().cap }

// RequestCapFor reports the most one request of priority p may take: the
// per-request cap, or p's ceiling when that is lower (reserves that hold
// back more than the cap leaves P1 or P2: reserve_p0 0.6 caps a request
// at 600 of 1000 tokens, while P2 may fill 400). A request above it can
// never pass at p.
func (b *Budget) RequestCapFor(p Priority) int64 {
	return b.state.Load().caps[min(p, NumPriorities-1)]
}

// Ceiling reports how far priority p may fill the budget.
func (b *Budget) Ceiling(p Priority) int64 { return b.state.Load().ceilings[min(p, NumPriorities-1)] }

// Config reports the configuration in force.
func (b *Budget) Config() BudgetConfig { return b.state.Load().cfg }

// SetConfig validates cfg and puts it in force at once. Requests in flight
// keep their tokens; if they now exceed a ceiling, Reserves at that
// priority fail until enough are released.
func (b *Budget) SetConfig(cfg BudgetConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	st := &budgetState{cfg: cfg, cap: cfg.RequestCap(), ceilings: cfg.ceilings()}
	for p, c := range st.ceilings {
		st.caps[p] = min(st.cap, c)
	}
	b.state.Store(st)
	return nil
}

// SetCapacity changes the budget's tokens, keeping its shares; an explicit
// per-request cap larger than the new P0 headroom is lowered to it.
func (b *Budget) SetCapacity(tokens int64) error {
	cfg := b.Config()
	cfg.Tokens = tokens
	if cfg.Tokens >= 1 && cfg.MaxRequestTokens > cfg.headroom() {
		cfg.MaxRequestTokens = cfg.headroom()
	}
	return b.SetConfig(cfg)
}
