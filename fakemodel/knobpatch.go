package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

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
	if err := checkKnobNames(b, "", topKnobNames); err != nil {
		return p, err
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
	if s := err.Error(); strings.HasPrefix(s, "json: unknown field ") {
		f := strings.Trim(strings.TrimPrefix(s, "json: unknown field "), `"`)
		return &KnobError{Field: f, Msg: "unknown knob"}
	}
	if errors.Is(err, io.EOF) {
		return &KnobError{Msg: "empty body: want a JSON knob object"}
	}
	return &KnobError{Msg: "malformed JSON: " + err.Error()}
}

// topKnobNames and latencyKnobNames are the exact wire names of the knobs
// of a patch object and of its latency object.
var topKnobNames, latencyKnobNames = knobNameSets()

func knobNameSets() (top, latency map[string]bool) {
	top, latency = map[string]bool{wire.KnobLatency: true}, map[string]bool{}
	for _, name := range wire.KnobNames() {
		if l, ok := strings.CutPrefix(name, latencyKnob("")); ok {
			latency[l] = true
		} else {
			top[name] = true
		}
	}
	return top, latency
}

// checkKnobNames walks the JSON object b (the knobs under prefix, "" or
// "latency.") before encoding/json decodes it, since that would take
// "SLOTS" for "slots" and keep the last of a knob given twice. It refuses a
// name that is not exactly in names, and a name given twice, with a
// *KnobError naming it by its dotted path. What is not a well-formed
// object is left to the decoder, which reports it.
func checkKnobNames(b []byte, prefix string, names map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, len(names))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := t.(string)
		if !names[name] {
			return unknownKnob(prefix, name, names)
		}
		if seen[name] {
			return &KnobError{Field: prefix + name, Msg: "given twice (name each knob once)"}
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		if prefix == "" && name == wire.KnobLatency {
			if err := checkKnobNames(raw, latencyKnob(""), latencyKnobNames); err != nil {
				return err
			}
		}
	}
	return nil
}

// unknownKnob is the error of a name that is not a knob; when it is one but
// for its case, the message gives the wire name.
func unknownKnob(prefix, name string, names map[string]bool) error {
	for known := range names {
		if strings.EqualFold(known, name) {
			return &KnobError{Field: prefix + name, Msg: "unknown knob (names are lower case: " + prefix + known + ")"}
		}
	}
	return &KnobError{Field: prefix + name, Msg: "unknown knob"}
}
