package htmlreport

// This file is the only one that names the package defining the run files;
// every other file uses the names below.

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/levee-lab/levee/lab"
)

type (
	sample         = lab.Sample
	prioritySample = lab.PrioritySample
	event          = lab.Event
	summary        = lab.Summary
	runInfo        = lab.RunInfo
)

// Event kinds the report draws.
const (
	eventFaultApply  = lab.EventFaultApply
	eventFaultRevert = lab.EventFaultRevert
	eventNarration   = lab.EventNarration
	eventOOMKill     = lab.EventOOMKill
	eventChildStart  = lab.EventChildStart
)

const (
	outcomeOK       = lab.OutcomeOK
	outcomeFallback = lab.OutcomeFallback
	outcomeTimeout  = lab.OutcomeTimeout
	outcomeError    = lab.OutcomeError
	outcomeDropped  = lab.OutcomeGeneratorDropped
)

var (
	outcomeNames  = lab.Outcomes
	priorityNames = lab.Priorities
	// metricDoc says what each threshold metric measures.
	metricDoc = lab.ThresholdMetrics
)

// parseThreshold returns the operator and value of a threshold's expression.
func parseThreshold(name, expr string) (op string, value float64, err error) {
	t, err := lab.ParseThreshold(name, expr)
	return t.Op, t.Value, err
}

// Run is one run folder read back: what run.json, summary.json,
// samples.jsonl and events.jsonl hold.
type Run struct {
	Dir     string
	Info    *runInfo // nil when run.json is missing or unreadable
	Summary *summary // rebuilt from the last sample when Partial
	// Partial is true for a run without summary.json (it was killed).
	Partial bool
	Samples []sample
	Events  []event // nil when events.jsonl is missing
}

// Load reads the run folder dir. A run needs samples; a missing
// summary.json (a killed run) or events.jsonl is tolerated, a malformed file
// is an error naming it.
func Load(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run folder %s: not a folder", dir)
	}
	r, err := lab.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	samples, err := lab.ReadSamples(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s: nothing to draw over time (a summary alone makes only the text report)", dir, lab.SamplesFile)
	}
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no samples recorded", dir)
	}
	events, err := lab.ReadEvents(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return &Run{Dir: dir, Info: r.Info, Summary: r.Summary, Partial: r.Partial, Samples: samples, Events: events}, nil
}

// metricValue is a summary's value of a threshold metric (NaN when it does
// not apply).
func metricValue(s *summary, name string) float64 {
	if s == nil {
		return math.NaN()
	}
	v, _ := s.Metric(name)
	return v
}
