package decimal

import (
	"encoding/json"
	"math"
	"testing"
)

func TestRound(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		digits int
		want   float64
	}{
		{1.23456, 3, 1.235},
		{-1.23456, 3, -1.235},
		{2.5, 0, 3},
		{-2.5, 0, -3},
		{0, 6, 0},
		{123456.789, 1, 123456.8},
		{math.MaxFloat64, 3, math.MaxFloat64}, // ×1000 overflows: kept
		{-1.7e308, 3, -1.7e308},               // the same below zero
		{1e300, 6, 1e300},                     // ×1e6 is finite: rounded, no change
		{math.Inf(1), 3, math.Inf(1)},         // not finite: as it is
		{math.Inf(-1), 3, math.Inf(-1)},
	} {
		if got := Round(tc.v, tc.digits); got != tc.want {
			t.Errorf("Round(%g, %d) = %g, want %g", tc.v, tc.digits, got, tc.want)
		}
	}
	if got := Round(math.NaN(), 3); !math.IsNaN(got) {
		t.Errorf("Round(NaN) = %g", got)
	}
	// What made a finished run lose its summary.json: a huge finite figure
	// rounded to +Inf, which encoding/json refuses.
	if _, err := json.Marshal(Round(1.7e308, 3)); err != nil {
		t.Errorf("a rounded huge figure does not encode: %v", err)
	}
}
