package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestPlanCommandRejectsUnprintableFigures: non-finite or huge figures are
// a usage error (exit 2) naming the flag and its bound, never a plan of
// wrapped-around numbers or a misleading "nothing to plan".
func TestPlanCommandRejectsUnprintableFigures(t *testing.T) {
	tests := []commandCase{
		{name: "at the bounds", args: []string{"--slots", "1000000", "--nodes", "1000", "--mean", "24h", "--target", "1e9"}, wantOut: []string{"1000 nodes × 1000000 slots = 1000000000 calls at once", "86,400,000,000,000 slots"}},
		{name: "infinite target", args: []string{"--slots", "50", "--mean", "1.2s", "--target", "Inf"}, wantCode: 2, wantErr: []string{"--target +Inf req/s: want a finite load"}},
		{name: "infinite target alone", args: []string{"--target", "Inf"}, wantCode: 2, wantErr: []string{"--target +Inf req/s: want a finite load"}},
		{name: "infinite prompt", args: []string{"--slots", "50", "--mean", "1.2s", "--prompt-tokens", "Inf"}, wantCode: 2, wantErr: []string{"--prompt-tokens +Inf: want a finite number of tokens"}},
		{name: "slots that wrap", args: []string{"--slots", "9223372036854775807", "--nodes", "2", "--mean", "1s"}, wantCode: 2, wantErr: []string{"--slots 9223372036854775807: want ≤ 1,000,000"}},
		{name: "C too large", args: []string{"--slots", "1000000", "--nodes", "1000000", "--mean", "1s"}, wantCode: 2, wantErr: []string{"C = nodes × slots = 1000000 × 1000000", "want ≤ 1,000,000,000"}},
		{name: "a spread too wide", args: []string{"--slots", "50", "--p50", "1ns", "--p99", "24h"}, wantCode: 2, wantErr: []string{"p50 1ns and p99 24h0m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if out := tt.check(t, "plan"); tt.wantCode != 0 && out != "" {
				t.Errorf("a failed plan printed to stdout: %q", out)
			}
		})
	}
}

// TestPlanChecksTheStoredExperiment: `levee plan RUN_DIR` checks the
// experiment run.json holds as `levee run` checks an experiment file, and
// refuses a bad one (exit 2) naming the run folder and the field. It
// planned from it unchecked: a negative mix weight skewed the shares of
// the mix (the agent share among them) without a word.
func TestPlanChecksTheStoredExperiment(t *testing.T) {
	ref := "../../experiments/reference/03-priority-shedding"
	for _, tt := range []struct {
		name  string
		edit  func(exp map[string]any)
		field string
	}{
		{"negative mix weight", func(exp map[string]any) {
			exp["mix"].(map[string]any)["priorities"].(map[string]any)["P2"] = -0.7
		}, "mix.priorities.P2: -0.7: want a weight ≥ 0"},
		{"node count out of range", func(exp map[string]any) {
			exp["nodes"].(map[string]any)["count"] = 99
		}, "nodes.count: 99: want 1..32"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "edited")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"summary.json", "samples.jsonl", "events.jsonl"} {
				b, err := os.ReadFile(filepath.Join(ref, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(filepath.Join(ref, "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			var info map[string]any
			if err := json.Unmarshal(b, &info); err != nil {
				t.Fatal(err)
			}
			tt.edit(info["experiment"].(map[string]any))
			if b, err = json.Marshal(info); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			c := commandCase{args: []string{dir}, wantCode: 2, wantErr: []string{"run folder " + dir + ": run.json: the experiment it holds: " + tt.field}}
			if out := c.check(t, "plan"); out != "" {
				t.Errorf("a refused plan printed to stdout: %q", out)
			}
		})
	}
	// The reference run as recorded still plans.
	commandCase{args: []string{ref}, wantOut: []string{"QPS_safe = C / T"}}.check(t, "plan")
}
