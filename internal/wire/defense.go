package wire

// Defense names: the gateway's run-time switches, the keys of PUT
// /admin/defenses and of the defenses config, and the LabelDefense values
// of MetricDefenseEnabled.
const (
	DefenseRateLimit = "ratelimit" // per tenant and route rate limit
	DefenseGuard     = "guard"     // overload guard (levels)
	DefenseBulkhead  = "bulkhead"  // concurrency limit and priority queue per class
	DefenseBudget    = "budget"    // token cost budget
	DefenseBreaker   = "breaker"   // per-node circuit breaker
	DefenseRetry     = "retry"     // retries within a retry budget
	DefenseFallback  = "fallback"  // static fallback answers

	NumDefenses = 7
)

// DefenseNames returns the defense names in display order.
func DefenseNames() [NumDefenses]string {
	return [NumDefenses]string{DefenseRateLimit, DefenseGuard, DefenseBulkhead, DefenseBudget, DefenseBreaker, DefenseRetry, DefenseFallback}
}

// Defenses are the gateway's switches, one per defense name. All off makes
// the gateway a plain pass-through: no limit, no queue, no shedding.
type Defenses struct {
	RateLimit bool `yaml:"ratelimit" json:"ratelimit"`
	Guard     bool `yaml:"guard" json:"guard"`
	Bulkhead  bool `yaml:"bulkhead" json:"bulkhead"`
	Budget    bool `yaml:"budget" json:"budget"`
	Breaker   bool `yaml:"breaker" json:"breaker"`
	Retry     bool `yaml:"retry" json:"retry"`
	Fallback  bool `yaml:"fallback" json:"fallback"`
}

// AllDefenses returns every defense on (on=true) or off.
func AllDefenses(on bool) Defenses { return Defenses{on, on, on, on, on, on, on} }

// field returns the switch of the defense named name, or nil.
func (d *Defenses) field(name string) *bool {
	switch name {
	case DefenseRateLimit:
		return &d.RateLimit
	case DefenseGuard:
		return &d.Guard
	case DefenseBulkhead:
		return &d.Bulkhead
	case DefenseBudget:
		return &d.Budget
	case DefenseBreaker:
		return &d.Breaker
	case DefenseRetry:
		return &d.Retry
	case DefenseFallback:
		return &d.Fallback
	}
	return nil
}

// Get reports one defense by name; ok is false for an unknown name.
func (d Defenses) Get(name string) (on, ok bool) {
	if p := d.field(name); p != nil {
		return *p, true
	}
	return false, false
}

// Set switches one defense by name; it reports false for an unknown name.
func (d *Defenses) Set(name string, on bool) bool {
	p := d.field(name)
	if p == nil {
		return false
	}
	*p = on
	return true
}

// Map returns the defenses keyed by name.
func (d Defenses) Map() map[string]bool {
	m := make(map[string]bool, NumDefenses)
	for _, n := range DefenseNames() {
		m[n], _ = d.Get(n)
	}
	return m
}
