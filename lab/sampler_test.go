package lab

import (
	"math"
	"testing"
)

func TestServiceWindow(t *testing.T) {
	var w serviceWindow
	if _, ok := w.mean(); ok {
		t.Fatal("an empty window has a mean")
	}
	w.add(4.9, 49) // 0.1 s each, but too few to trust
	if _, ok := w.mean(); ok {
		t.Fatal("49 observations gave a mean")
	}
	w.add(15.1, 1) // one long stream
	m, ok := w.mean()
	if !ok || math.Abs(m-0.4) > 1e-9 {
		t.Fatalf("mean = %v, %v; want 0.4 (20 s over 50 requests)", m, ok)
	}
	// The ring forgets the oldest scrapes: after a full turn of quiet
	// scrapes nothing is left.
	for range len(w.sum) {
		w.add(0, 0)
	}
	if _, ok := w.mean(); ok {
		t.Fatal("a window of empty scrapes has a mean")
	}
	// A full turn of steady scrapes gives their mean.
	for range len(w.sum) {
		w.add(2.2, 10)
	}
	if m, ok := w.mean(); !ok || math.Abs(m-0.22) > 1e-9 {
		t.Fatalf("steady mean = %v, %v; want 0.22", m, ok)
	}
}
