package wire

import "fmt"

// Outcome is how one offered request ended. Every request the load
// generator offers ends in exactly one Outcome: the gateway sends it as
// HeaderOutcome (and HeaderOutcomeFinal on streams) and counts it once in
// MetricRequests; the generator counts OutcomeGeneratorDropped itself.
// Its text form is its name ("ok", "shed_queue_full", …), so a map keyed
// by Outcome encodes to JSON with the names as keys.
type Outcome uint8

// The outcomes, in report order. The ones before OutcomeGeneratorDropped
// are the ones a server may send.
const (
	OutcomeOK Outcome = iota
	OutcomeFallback
	OutcomeShedRateLimit
	OutcomeShedOverload
	OutcomeShedQueueFull
	OutcomeShedQueueTimeout
	OutcomeShedBudget
	OutcomeTimeout
	OutcomeError
	OutcomeGeneratorDropped

	// NumOutcomes is the number of outcomes: valid values are below it.
	NumOutcomes = OutcomeGeneratorDropped + 1
	// NumServerOutcomes is the number of outcomes a server may send (all
	// but OutcomeGeneratorDropped); they are the values below it.
	NumServerOutcomes = OutcomeGeneratorDropped
)

var outcomeNames = [NumOutcomes]string{
	"ok", "fallback", "shed_ratelimit", "shed_overload", "shed_queue_full",
	"shed_queue_timeout", "shed_budget", "timeout", "error", "generator_dropped",
}

// Outcomes returns every outcome in report order.
func Outcomes() [NumOutcomes]Outcome {
	var out [NumOutcomes]Outcome
	for i := range out {
		out[i] = Outcome(i)
	}
	return out
}

// String returns the outcome's name, or "outcome(n)" for an invalid value.
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool { return o < NumOutcomes }

// FromServer reports whether a server may send o (every valid outcome but
// OutcomeGeneratorDropped).
func (o Outcome) FromServer() bool { return o < NumServerOutcomes }

// IsShed reports whether o is a shed: the gateway refused the request.
func (o Outcome) IsShed() bool { return o >= OutcomeShedRateLimit && o <= OutcomeShedBudget }

// Admitted reports whether the request was sent and not shed: the gateway
// let it through (its answer may still be a fallback, a timeout or an
// error).
func (o Outcome) Admitted() bool { return o.Valid() && !o.IsShed() && o != OutcomeGeneratorDropped }

// ShedReason returns the MetricShed reason of a shed outcome, and false
// when o is not a shed.
func (o Outcome) ShedReason() (ShedReason, bool) {
	if !o.IsShed() {
		return 0, false
	}
	return ShedReason(o - OutcomeShedRateLimit), true
}

// ParseOutcome returns the outcome named s (exact spelling) and whether
// there is one.
func ParseOutcome(s string) (Outcome, bool) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), true
		}
	}
	return 0, false
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("wire: invalid outcome %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Outcome) UnmarshalText(b []byte) error {
	v, ok := ParseOutcome(string(b))
	if !ok {
		return fmt.Errorf("wire: unknown outcome %q", b)
	}
	*o = v
	return nil
}

// ShedReason is why the gateway shed a request: the LabelReason value of
// MetricShed. Its text form is its name.
type ShedReason uint8

// The shed reasons, in the order of their outcomes.
const (
	ShedRateLimit ShedReason = iota
	ShedOverload
	ShedQueueFull
	ShedQueueTimeout
	ShedBudget

	// NumShedReasons is the number of shed reasons.
	NumShedReasons = ShedBudget + 1
)

var shedNames = [NumShedReasons]string{"ratelimit", "overload", "queue_full", "queue_timeout", "budget"}

// ShedReasons returns every shed reason in order.
func ShedReasons() [NumShedReasons]ShedReason {
	var out [NumShedReasons]ShedReason
	for i := range out {
		out[i] = ShedReason(i)
	}
	return out
}

// String returns the reason's name, or "shed(n)" for an invalid value.
func (r ShedReason) String() string {
	if r < NumShedReasons {
		return shedNames[r]
	}
	return fmt.Sprintf("shed(%d)", uint8(r))
}

// Outcome returns the shed outcome of reason r.
func (r ShedReason) Outcome() Outcome { return OutcomeShedRateLimit + Outcome(r) }

// ParseShedReason returns the reason named s and whether there is one.
func ParseShedReason(s string) (ShedReason, bool) {
	for i, n := range shedNames {
		if n == s {
			return ShedReason(i), true
		}
	}
	return 0, false
}

// MarshalText implements encoding.TextMarshaler.
func (r ShedReason) MarshalText() ([]byte, error) {
	if r >= NumShedReasons {
		return nil, fmt.Errorf("wire: invalid shed reason %d", uint8(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *ShedReason) UnmarshalText(b []byte) error {
	v, ok := ParseShedReason(string(b))
	if !ok {
		return fmt.Errorf("wire: unknown shed reason %q", b)
	}
	*r = v
	return nil
}
