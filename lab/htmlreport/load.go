package htmlreport

// This file is the only one that names the packages defining the run files
// and their vocabulary (runfiles, experiment, load, wire); every other file
// uses the names below.

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

type (
	sample         = runfiles.Sample
	prioritySample = runfiles.PrioritySample
	event          = runfiles.Event
	summary        = runfiles.Summary
	runInfo        = runfiles.RunInfo
	runPrediction  = runfiles.Prediction
)

var (
	// readPredictions pairs a run's prediction events by step.
	readPredictions = runfiles.ReadPredictions
	// fmtPredictionValue prints a prediction's number in its unit.
	fmtPredictionValue = runfiles.FormatPredictionValue
)

// Event kinds the report draws.
const (
	eventFaultApply  = runfiles.EventFaultApply
	eventFaultRevert = runfiles.EventFaultRevert
	eventNarration   = runfiles.EventNarration
	eventOOMKill     = runfiles.EventOOMKill
	eventChildStart  = runfiles.EventChildStart
)

var (
	outcomeOK       = wire.OutcomeOK.String()
	outcomeFallback = wire.OutcomeFallback.String()
	outcomeTimeout  = wire.OutcomeTimeout.String()
	outcomeError    = wire.OutcomeError.String()
	outcomeDropped  = wire.OutcomeGeneratorDropped.String()

	outcomeNames  = load.Outcomes
	priorityNames = load.Priorities
	// metricDoc says what each threshold metric measures.
	metricDoc = experiment.ThresholdMetrics
)

// parseThreshold returns the operator and value of a threshold's expression.
func parseThreshold(name, expr string) (op string, value float64, err error) {
	t, err := experiment.ParseThreshold(name, expr)
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
	r, err := runfiles.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	samples, err := runfiles.ReadSamples(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s: nothing to draw over time (a summary alone makes only the text report)", dir, runfiles.SamplesFile)
	}
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no samples recorded", dir)
	}
	events, err := runfiles.ReadEvents(dir)
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
