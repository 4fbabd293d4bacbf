package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/levee-lab/levee/internal/jsonstrict"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// latencyKnob is the wire name of a latency knob ("latency.p99_ms").
func latencyKnob(name string) string { return wire.KnobLatency + "." + name }

// AsPatch returns k as a wire patch with every knob set: the JSON of GET
// /admin/knobs.
func (k Knobs) AsPatch() wire.KnobPatch {
	l := k.Latency
	return wire.KnobPatch{
		Latency: &wire.LatencyPatch{
			Dist: wire.Ptr(l.Dist), P50Ms: wire.Ptr(l.P50Ms), P99Ms: wire.Ptr(l.P99Ms),
			FixedMs: wire.Ptr(l.FixedMs), MinMs: wire.Ptr(l.MinMs), MaxMs: wire.Ptr(l.MaxMs),
		},
		LatencyMultiplier:  wire.Ptr(k.LatencyMultiplier),
		LatencyAddMs:       wire.Ptr(k.LatencyAddMs),
		TTFTMs:             wire.Ptr(k.TTFTMs),
		TokensPerS:         wire.Ptr(k.TokensPerS),
		MsPer1kTokens:      wire.Ptr(k.MsPer1kTokens),
		Slots:              wire.Ptr(k.Slots),
		Overflow:           wire.Ptr(k.Overflow),
		QueueSize:          wire.Ptr(k.QueueSize),
		Slowdown:           wire.Ptr(k.Slowdown),
		ErrorRate:          wire.Ptr(k.ErrorRate),
		HangRate:           wire.Ptr(k.HangRate),
		AbortOnDisconnect:  wire.Ptr(k.AbortOnDisconnect),
		AnswerTokens:       wire.Ptr(k.AnswerTokens),
		BackpressureQueue:  wire.Ptr(k.Backpressure.Queue),
		BackpressureHeapMB: wire.Ptr(k.Backpressure.HeapMB),
		BackpressureCPU:    wire.Ptr(k.Backpressure.CPU),
		BackpressureForce:  wire.Ptr(k.Backpressure.Force),
		PressurePatch:      k.Config.Patch(),
	}
}

// Apply returns k with every knob p sets replaced. It does not validate.
func (k Knobs) Apply(p wire.KnobPatch) Knobs {
	if l := p.Latency; l != nil {
		set(&k.Latency.Dist, l.Dist)
		set(&k.Latency.P50Ms, l.P50Ms)
		set(&k.Latency.P99Ms, l.P99Ms)
		set(&k.Latency.FixedMs, l.FixedMs)
		set(&k.Latency.MinMs, l.MinMs)
		set(&k.Latency.MaxMs, l.MaxMs)
	}
	set(&k.LatencyMultiplier, p.LatencyMultiplier)
	set(&k.LatencyAddMs, p.LatencyAddMs)
	set(&k.TTFTMs, p.TTFTMs)
	set(&k.TokensPerS, p.TokensPerS)
	set(&k.MsPer1kTokens, p.MsPer1kTokens)
	set(&k.Slots, p.Slots)
	set(&k.Overflow, p.Overflow)
	set(&k.QueueSize, p.QueueSize)
	set(&k.Slowdown, p.Slowdown)
	set(&k.ErrorRate, p.ErrorRate)
	set(&k.HangRate, p.HangRate)
	set(&k.AbortOnDisconnect, p.AbortOnDisconnect)
	set(&k.AnswerTokens, p.AnswerTokens)
	set(&k.Backpressure.Queue, p.BackpressureQueue)
	set(&k.Backpressure.HeapMB, p.BackpressureHeapMB)
	set(&k.Backpressure.CPU, p.BackpressureCPU)
	set(&k.Backpressure.Force, p.BackpressureForce)
	k.Config = k.Config.Apply(p.PressurePatch)
	return k
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// MarshalJSON encodes k as its wire patch, every knob set.
func (k Knobs) MarshalJSON() ([]byte, error) { return json.Marshal(k.AsPatch()) }

// UnmarshalJSON applies a JSON knob patch onto k (knobs it does not name
// keep their value). Unknown knobs (names are exact), a knob named twice
// and wrong types are *KnobError; it does not validate ranges (Validate
// does).
func (k *Knobs) UnmarshalJSON(b []byte) error {
	p, err := decodeKnobPatch(b)
	if err != nil {
		return err
	}
	*k = k.Apply(p)
	return nil
}

// MarshalYAML encodes k as its wire patch, every knob set.
func (k Knobs) MarshalYAML() (any, error) { return k.AsPatch(), nil }

// decodeKnobPatch decodes exactly one JSON knob object, rejecting unknown
// knobs, names that are not exactly a knob's (any case but the wire's) and
// names given twice. Errors are *KnobError.
func decodeKnobPatch(b []byte) (wire.KnobPatch, error) {
	var p wire.KnobPatch
	// encoding/json would take "SLOTS" for slots and keep the last of a
	// knob given twice; jsonstrict refuses both, by the name's whole path.
	var ne *jsonstrict.NameError
	if err := jsonstrict.Check(b, &p); errors.As(err, &ne) {
		return p, knobNameError(ne)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, jsonKnobError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return p, &KnobError{Field: "", Msg: "trailing data after the knob object"}
	}
	return p, nil
}

func jsonKnobError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		re := openai.TypeError(te)
		if re.Field == "" { // the body itself is not an object
			return &KnobError{Msg: "the knob patch " + re.Msg}
		}
		return &KnobError{Field: re.Field, Msg: re.Msg}
	}
	if errors.Is(err, io.EOF) {
		return &KnobError{Msg: "empty body: want a JSON knob object"}
	}
	return &KnobError{Msg: "malformed JSON: " + err.Error()}
}

// knobNameError phrases jsonstrict's error for a knob patch: a name that
// is no knob (or one in another case, whose wire name it gives), or a knob
// given twice.
func knobNameError(ne *jsonstrict.NameError) error {
	switch {
	case ne.Twice:
		return &KnobError{Field: ne.Path, Msg: "given twice (name each knob once)"}
	case ne.Exact != "":
		return &KnobError{Field: ne.Path, Msg: "unknown knob (names are lower case: " + ne.Exact + ")"}
	}
	return &KnobError{Field: ne.Path, Msg: "unknown knob"}
}
