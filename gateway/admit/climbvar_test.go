package admit

import (
	"math"
	"testing"
)

// TestClimbStepWeighedAsAGuess: a climb's step is a guess, so the window
// that next reads the capacity below it moves the estimate as against a
// standard error of half the step, once; the window after weighs as
// before.
func TestClimbStepWeighedAsAGuess(t *testing.T) {
	a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 12, Min: 1, Max: 100}, gradientStep)
	a.capEst, a.capVar, a.climbVar = 15.6, 0.5, 1.5*1.5 // a step of 3 to 15.6
	a.filter(12.5, 1)
	if want := 15.6 - 2.75/3.75*3.1; math.Abs(a.capEst-want) > 1e-9 {
		t.Fatalf("after the overshoot's window the estimate is %.3f, want %.3f", a.capEst, want)
	}
	if a.climbVar != 0 {
		t.Fatalf("the step's variance is %.2f after a window weighed it, want 0", a.climbVar)
	}
	before, p := a.capEst, a.capVar
	a.filter(12.5, 1)
	if want := before + p/(p+1)*(12.5-before); math.Abs(a.capEst-want) > 1e-9 {
		t.Fatalf("the next window moves the estimate to %.3f, want %.3f", a.capEst, want)
	}
}
