package load

// Outcome names, exactly as in docs/CONTRACTS.md. Every request the
// generator offers ends in exactly one of these. Package lab re-exports
// them; load cannot import lab because lab imports load.
const (
	OutcomeOK               = "ok"
	OutcomeFallback         = "fallback"
	OutcomeShedRateLimit    = "shed_ratelimit"
	OutcomeShedOverload     = "shed_overload"
	OutcomeShedQueueFull    = "shed_queue_full"
	OutcomeShedQueueTimeout = "shed_queue_timeout"
	OutcomeShedBudget       = "shed_budget"
	OutcomeTimeout          = "timeout"
	OutcomeError            = "error"
	OutcomeGeneratorDropped = "generator_dropped"
)

// Outcomes lists every outcome in report order. Do not modify.
var Outcomes = []string{
	OutcomeOK, OutcomeFallback, OutcomeShedRateLimit, OutcomeShedOverload,
	OutcomeShedQueueFull, OutcomeShedQueueTimeout, OutcomeShedBudget,
	OutcomeTimeout, OutcomeError, OutcomeGeneratorDropped,
}

// Priorities in order of importance. Do not modify.
var Priorities = []string{"P0", "P1", "P2"}

// outcome is an index into Outcomes; the counters are arrays indexed by it.
type outcome int

const (
	oOK outcome = iota
	oFallback
	oShedRateLimit
	oShedOverload
	oShedQueueFull
	oShedQueueTimeout
	oShedBudget
	oTimeout
	oError
	oDropped
	numOutcomes
)

func (o outcome) String() string { return Outcomes[o] }

// shed reports whether the gateway refused the request (any shed_* outcome).
func (o outcome) shed() bool { return o >= oShedRateLimit && o <= oShedBudget }

// admitted reports whether the request was sent and not shed: the gateway let
// it through (its answer may still be a fallback, a timeout or an error).
func (o outcome) admitted() bool { return !o.shed() && o != oDropped }

// outcomeByName maps a gateway X-Levee-Outcome header value to an outcome.
// generator_dropped is not a value a server may send.
var outcomeByName = map[string]outcome{
	OutcomeOK:               oOK,
	OutcomeFallback:         oFallback,
	OutcomeShedRateLimit:    oShedRateLimit,
	OutcomeShedOverload:     oShedOverload,
	OutcomeShedQueueFull:    oShedQueueFull,
	OutcomeShedQueueTimeout: oShedQueueTimeout,
	OutcomeShedBudget:       oShedBudget,
	OutcomeTimeout:          oTimeout,
	OutcomeError:            oError,
}

// priority is an index into Priorities.
type priority int

func priorityIndex(name string) (priority, bool) {
	for i, p := range Priorities {
		if p == name {
			return priority(i), true
		}
	}
	return 0, false
}
