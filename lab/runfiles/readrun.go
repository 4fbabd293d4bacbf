package runfiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Run is one run folder read back.
type Run struct {
	Dir     string
	Info    *RunInfo // nil when run.json is missing; its experiment normalized
	Summary *Summary
	// Partial is true when summary.json is missing (the run was killed):
	// Summary is then rebuilt from the samples, events and run.json (see
	// partialSummary) and has no latencies.
	Partial bool
	// Predictions are the run's predict steps from events.jsonl (nil when
	// it has none, or no events file).
	Predictions []Prediction
}

// ReadRun reads a run folder. A folder without summary.json (a killed run)
// is summarized from its samples, events and run.json.
//
// Bad input is an error naming the file, never a silent default: a
// run.json that does not decode or whose experiment does not pass the
// checks an experiment file passes (see RunInfo and ReadRunInfo), a
// summary.json that does not decode or lacks a field every summary has
// (see Summary.missingFields) and, without summary.json, a samples.jsonl
// with a bad line (the error names the line), and an events.jsonl with a
// bad line whatever else is there. The one line tolerated is a
// torn last one (no trailing newline, as a run killed mid-write leaves):
// ReadJSONL skips it, and the samples before it are the run.
func ReadRun(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	// run.json is optional (a folder of samples alone still reads), but
	// one that is there must read whole: its experiment gives the
	// thresholds, the global limits and the report's lines, and an edited
	// one would draw them wrong without a word.
	switch info, err := ReadRunInfo(dir); {
	case err == nil:
		r.Info = info
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	// A missing events file means no predictions; a torn last line is
	// skipped by ReadJSONL. Any other bad line would drop the predictions
	// after it, so it is an error, as in the samples.
	evs, err := ReadEvents(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: the events do not read back: %w", dir, err)
	}
	if len(evs) > 0 {
		r.Predictions = ReadPredictions(evs)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	switch {
	case err == nil:
		path := filepath.Join(dir, SummaryFile)
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if missing := s.missingFields(); len(missing) > 0 {
			return nil, fmt.Errorf("%s: not a run's summary: missing %s (fields every run's summary has)", path, strings.Join(missing, ", "))
		}
		r.Summary = &s
		return r, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	samples, err := ReadSamples(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s: no summary.json and no samples: %w", dir, err)
	case err != nil:
		// Not a torn last line: the run is not the samples before it.
		return nil, fmt.Errorf("%s: no summary.json, and the samples do not read back: %w", dir, err)
	case len(samples) == 0:
		return nil, fmt.Errorf("%s: no summary.json and no samples", dir)
	}
	r.Summary = partialSummary(samples, evs, r.Info)
	if r.Info != nil {
		r.Summary.Name = r.Info.Name
		r.Summary.Quick = r.Info.Quick
		if r.Info.Experiment != nil {
			r.Summary.Title = r.Info.Experiment.Title
		}
	}
	r.Partial = true
	return r, nil
}
