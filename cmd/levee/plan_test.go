package main

import "testing"

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
