package wire

import (
	"reflect"
	"strings"
)

// Knob names of the fake model (PUT /admin/knobs, knob YAML files, the
// fields of a KnobError). A latency knob is named with its parent,
// "latency.p99_ms".
const (
	KnobLatency           = "latency"
	KnobDist              = "dist"
	KnobP50Ms             = "p50_ms"
	KnobP99Ms             = "p99_ms"
	KnobFixedMs           = "fixed_ms"
	KnobMinMs             = "min_ms"
	KnobMaxMs             = "max_ms"
	KnobLatencyMultiplier = "latency_multiplier"
	KnobLatencyAddMs      = "latency_add_ms"
	KnobTTFTMs            = "ttft_ms"
	KnobTokensPerS        = "tokens_per_s"
	KnobMsPer1kTokens     = "ms_per_1k_tokens"
	KnobSlots             = "slots"
	KnobOverflow          = "overflow"
	KnobQueueSize         = "queue_size"
	KnobSlowdown          = "slowdown"
	KnobErrorRate         = "error_rate"
	KnobHangRate          = "hang_rate"
	KnobAbortOnDisconnect = "abort_on_disconnect"
	KnobAnswerTokens      = "answer_tokens"

	// Backpressure knobs: the watermarks past which a node sends
	// HeaderBackpressure upstream (seed 004's worker → gateway signal),
	// and a switch that sends it regardless.
	KnobBackpressureQueue  = "backpressure_queue"
	KnobBackpressureHeapMB = "backpressure_heap_mb"
	KnobBackpressureCPU    = "backpressure_cpu"
	KnobBackpressureForce  = "backpressure_force"

	// Pressure knobs: a fake model node's and, through PUT
	// /admin/pressure, a gateway's.
	KnobChurnMBPerS      = "churn_mb_per_s"
	KnobBallastMB        = "ballast_mb"
	KnobCPUHogGoroutines = "cpu_hog_goroutines"
	KnobCPUHogDuty       = "cpu_hog_duty"
)

// Latency distributions, the values of the dist knob.
const (
	DistLognormal = "lognormal"
	DistFixed     = "fixed"
	DistUniform   = "uniform"
)

// Overflow policies, the values of the overflow knob: what a node does
// with a request when every slot is busy.
const (
	OverflowQueue   = "queue"   // wait in an unbounded FIFO
	OverflowBounded = "bounded" // wait in a FIFO of at most queue_size, then 429
	OverflowReject  = "reject"  // 429 at once
)

// KnobPatch is a partial set of fake model knobs: the body of PUT
// /admin/knobs, a knob YAML file, a chaos fault's change. A nil field is
// left as it is; a patch with every field set is a whole knob set (what
// GET /admin/knobs answers). Ranges and meanings are the fake model's
// (package fakemodel, docs/CONTRACTS.md).
type KnobPatch struct {
	Latency           *LatencyPatch `json:"latency,omitempty" yaml:"latency,omitempty"`
	LatencyMultiplier *float64      `json:"latency_multiplier,omitempty" yaml:"latency_multiplier,omitempty"`
	LatencyAddMs      *float64      `json:"latency_add_ms,omitempty" yaml:"latency_add_ms,omitempty"`
	TTFTMs            *float64      `json:"ttft_ms,omitempty" yaml:"ttft_ms,omitempty"`
	TokensPerS        *float64      `json:"tokens_per_s,omitempty" yaml:"tokens_per_s,omitempty"`
	MsPer1kTokens     *float64      `json:"ms_per_1k_tokens,omitempty" yaml:"ms_per_1k_tokens,omitempty"`
	Slots             *int          `json:"slots,omitempty" yaml:"slots,omitempty"`
	Overflow          *string       `json:"overflow,omitempty" yaml:"overflow,omitempty"`
	QueueSize         *int          `json:"queue_size,omitempty" yaml:"queue_size,omitempty"`
	Slowdown          *float64      `json:"slowdown,omitempty" yaml:"slowdown,omitempty"`
	ErrorRate         *float64      `json:"error_rate,omitempty" yaml:"error_rate,omitempty"`
	HangRate          *float64      `json:"hang_rate,omitempty" yaml:"hang_rate,omitempty"`
	AbortOnDisconnect *bool         `json:"abort_on_disconnect,omitempty" yaml:"abort_on_disconnect,omitempty"`
	AnswerTokens      *int          `json:"answer_tokens,omitempty" yaml:"answer_tokens,omitempty"`

	BackpressureQueue  *int     `json:"backpressure_queue,omitempty" yaml:"backpressure_queue,omitempty"`
	BackpressureHeapMB *float64 `json:"backpressure_heap_mb,omitempty" yaml:"backpressure_heap_mb,omitempty"`
	BackpressureCPU    *float64 `json:"backpressure_cpu,omitempty" yaml:"backpressure_cpu,omitempty"`
	BackpressureForce  *bool    `json:"backpressure_force,omitempty" yaml:"backpressure_force,omitempty"`
	// PressurePatch holds the pressure knobs, flat in JSON and YAML.
	PressurePatch `yaml:",inline"`
}

// LatencyPatch is a partial base service-time distribution.
type LatencyPatch struct {
	Dist    *string  `json:"dist,omitempty" yaml:"dist,omitempty"`
	P50Ms   *float64 `json:"p50_ms,omitempty" yaml:"p50_ms,omitempty"`
	P99Ms   *float64 `json:"p99_ms,omitempty" yaml:"p99_ms,omitempty"`
	FixedMs *float64 `json:"fixed_ms,omitempty" yaml:"fixed_ms,omitempty"`
	MinMs   *float64 `json:"min_ms,omitempty" yaml:"min_ms,omitempty"`
	MaxMs   *float64 `json:"max_ms,omitempty" yaml:"max_ms,omitempty"`
}

// PressurePatch is a partial set of pressure knobs: allocation churn,
// retained ballast and a bounded CPU hog. It is the body of the gateway's
// PUT /admin/pressure and part of a KnobPatch. Zeros turn a pressure off.
type PressurePatch struct {
	ChurnMBPerS      *float64 `json:"churn_mb_per_s,omitempty" yaml:"churn_mb_per_s,omitempty"`
	BallastMB        *float64 `json:"ballast_mb,omitempty" yaml:"ballast_mb,omitempty"`
	CPUHogGoroutines *int     `json:"cpu_hog_goroutines,omitempty" yaml:"cpu_hog_goroutines,omitempty"`
	CPUHogDuty       *float64 `json:"cpu_hog_duty,omitempty" yaml:"cpu_hog_duty,omitempty"`
}

// Ptr returns a pointer to a copy of v, for filling patches:
// KnobPatch{Slots: wire.Ptr(8)}.
func Ptr[T any](v T) *T { return &v }

// KnobNames returns the name of every knob a KnobPatch can set, in field
// order, latency knobs dotted ("latency.p99_ms").
func KnobNames() []string {
	var p KnobPatch
	var names []string
	for _, l := range leaves(&p) {
		names = append(names, l.name)
	}
	return names
}

// IsZero reports whether p changes nothing.
func (p KnobPatch) IsZero() bool { return len(p.Names()) == 0 }

// Names returns the names of the knobs p sets, in field order, latency
// knobs dotted ("latency.p99_ms").
func (p KnobPatch) Names() []string {
	var names []string
	for _, l := range leaves(&p) {
		if !l.v.IsNil() {
			names = append(names, l.name)
		}
	}
	return names
}

// Merge returns p with every knob q sets taken from q: applying the result
// equals applying p, then q. Neither p nor q changes.
func (p KnobPatch) Merge(q KnobPatch) KnobPatch {
	var out KnobPatch
	overlay(&out, p)
	overlay(&out, q)
	return out
}

// Pick returns the values p holds for the knobs like sets. Called on a
// whole knob set with a patch, it is the patch that undoes that patch.
// Knobs like sets but p does not are left unset.
func (p KnobPatch) Pick(like KnobPatch) KnobPatch {
	var out KnobPatch
	lo, lp, ll := leaves(&out), leaves(&p), leaves(&like)
	for i := range lo {
		if !ll[i].v.IsNil() && !lp[i].v.IsNil() {
			lo[i].v.Set(clonePtr(lp[i].v))
		}
	}
	out.normalize()
	return out
}

// overlay copies every knob src sets into dst (deeply: dst shares no
// pointer with src).
func overlay(dst *KnobPatch, src KnobPatch) {
	ld, ls := leaves(dst), leaves(&src)
	for i := range ld {
		if !ls[i].v.IsNil() {
			ld[i].v.Set(clonePtr(ls[i].v))
		}
	}
	dst.normalize()
}

// normalize drops an empty nested latency patch (leaves allocates one).
func (p *KnobPatch) normalize() {
	if p.Latency != nil && *p.Latency == (LatencyPatch{}) {
		p.Latency = nil
	}
}

// leaf is one knob of a patch: its dotted name and its settable pointer
// field.
type leaf struct {
	name string
	v    reflect.Value
}

// leaves returns the knobs of *p in field order. It allocates p.Latency
// when nil so every leaf is settable; normalize undoes that.
func leaves(p *KnobPatch) []leaf {
	if p.Latency == nil {
		p.Latency = &LatencyPatch{}
	}
	var out []leaf
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		t := v.Type()
		for i := range t.NumField() {
			sf, fv := t.Field(i), v.Field(i)
			switch {
			case sf.Anonymous:
				walk(fv, prefix)
			case sf.Type.Elem().Kind() == reflect.Struct:
				walk(fv.Elem(), prefix+jsonName(sf)+".")
			default:
				out = append(out, leaf{prefix + jsonName(sf), fv})
			}
		}
	}
	walk(reflect.ValueOf(p).Elem(), "")
	return out
}

func jsonName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	return name
}

// clonePtr returns a new pointer to a copy of what v points to.
func clonePtr(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type().Elem())
	c.Elem().Set(v.Elem())
	return c
}
