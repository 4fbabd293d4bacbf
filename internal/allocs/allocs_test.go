package allocs

import "testing"

var sink []byte

// TestTotalCountsAnAllocationEverySecondCall: one allocation every second
// call is 500 in 1,000 runs, where testing.AllocsPerRun reads 0.
func TestTotalCountsAnAllocationEverySecondCall(t *testing.T) {
	n := 0
	f := func() {
		n++
		if n%2 == 0 {
			sink = make([]byte, 8)
		}
	}
	if got := testing.AllocsPerRun(1000, f); got != 0 {
		t.Fatalf("testing.AllocsPerRun read %v; this test shows what it hides", got)
	}
	if got := Total(1000, f); got != 500 {
		t.Errorf("Total(1000) = %d, want 500", got)
	}
}

// TestTotalOfNothing: a function that allocates nothing counts 0.
func TestTotalOfNothing(t *testing.T) {
	x := 0
	if got := Total(1000, func() { x++ }); got != 0 {
		t.Errorf("Total = %d, want 0", got)
	}
}
