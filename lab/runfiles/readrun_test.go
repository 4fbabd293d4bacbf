package runfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRunBadInput: ReadRun reads a run's summary.json, or without one
// its samples; a summary without the fields every summary has, or a bad
// sample or event line anywhere but a torn last one, is an error naming the file
// (and line), never half a run or a blank one.
func TestReadRunBadInput(t *testing.T) {
	const (
		aSummary = `{"name": "03-priority-shedding", "started": "2026-12-01T01:45:53Z", "offered": 9, "outcomes": {"ok": 9}, "by_priority": {}}`
		sample1  = `{"t": "2026-12-01T01:45:54Z", "elapsed_s": 1, "offered_total": 100}`
		sample2  = `{"t": "2026-12-01T01:45:55Z", "elapsed_s": 2, "offered_total": 200}`
		sample3  = `{"t": "2026-12-01T01:45:56Z", "elapsed_s": 3, "offered_total": 300}`
	)
	tests := []struct {
		name        string
		files       map[string]string
		want        string // in the error; "" for success
		wantOffered uint64
		wantPartial bool
	}{
		{name: "a summary", files: map[string]string{SummaryFile: aSummary}, wantOffered: 9},
		{name: "a summary wins over bad samples", files: map[string]string{SummaryFile: aSummary, SamplesFile: "nope\n"}, wantOffered: 9},
		{name: "samples, no summary (a killed run)", files: map[string]string{SamplesFile: sample1 + "\n" + sample2 + "\n"}, wantOffered: 200, wantPartial: true},
		{name: "a torn last sample is skipped", files: map[string]string{SamplesFile: sample1 + "\n" + sample2 + "\n" + sample3[:20]}, wantOffered: 200, wantPartial: true},

		{name: "empty folder", files: map[string]string{}, want: "no summary.json and no samples"},
		{name: "empty samples", files: map[string]string{SamplesFile: ""}, want: "no summary.json and no samples"},
		{name: "summary not JSON", files: map[string]string{SummaryFile: "{not json"}, want: "summary.json: invalid character"},
		{name: "summary {}", files: map[string]string{SummaryFile: "{}"}, want: "summary.json: not a run's summary: missing name, started, outcomes, by_priority"},
		{name: "summary null", files: map[string]string{SummaryFile: "null"}, want: "missing name, started, outcomes, by_priority"},
		{name: "summary with a name only", files: map[string]string{SummaryFile: `{"name": "x"}`}, want: "missing started, outcomes, by_priority"},
		{name: "summary without by_priority", files: map[string]string{SummaryFile: strings.Replace(aSummary, `"by_priority"`, `"byPriority"`, 1)}, want: "missing by_priority"},
		{name: "a bad sample in the middle", files: map[string]string{SamplesFile: sample1 + "\ng" + sample2 + "\n" + sample3 + "\n"}, want: "samples.jsonl: line 2: invalid character 'g'"},
		{name: "a torn last event is skipped", files: map[string]string{SummaryFile: aSummary, EventsFile: `{"kind": "fault"}` + "\n" + `{"ki`}, wantOffered: 9},
		{name: "a bad event in the middle", files: map[string]string{SummaryFile: aSummary, EventsFile: `{"kind": "fault"}` + "\nnope\n" + `{"kind": "fault"}` + "\n"}, want: "events.jsonl: line 2"},
		{name: "run.json not JSON", files: map[string]string{RunFile: "{not json", SummaryFile: aSummary}, want: "run.json: invalid character"},
		{name: "run.json with a negative weight", files: map[string]string{RunFile: `{"name": "x", "experiment": {"name": "x", "duration": "10s", "mix": {"priorities": {"P0": 1, "P2": -0.7}}}}`, SummaryFile: aSummary}, want: "run.json: the experiment it holds: mix.priorities.P2: -0.7: want a weight ≥ 0"},
		{name: "run.json without an experiment", files: map[string]string{RunFile: `{"name": "x"}`, SummaryFile: aSummary}, wantOffered: 9},
		{name: "a bad complete last sample", files: map[string]string{SamplesFile: sample1 + "\n" + sample2 + "\n" + sample3[:20] + "\n"}, want: "samples.jsonl: line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := ReadRun(dir)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("ReadRun = %v, %v; want an error containing %q", r, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Summary.Offered != tt.wantOffered || r.Partial != tt.wantPartial {
				t.Errorf("offered %d, partial %v; want %d, %v", r.Summary.Offered, r.Partial, tt.wantOffered, tt.wantPartial)
			}
		})
	}
}
