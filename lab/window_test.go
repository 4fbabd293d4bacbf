package lab

import "testing"

// TestShedIncrease: a live window's gateway sheds are the counters'
// increase gateway by gateway, and a counter reset (a restart mid-window)
// counts as Prometheus's increase() counts it: the new process's value is
// the increase since the reset. Summed before subtracting, a restarted
// gateway's drop hid every shed in the window (the report read 0).
func TestShedIncrease(t *testing.T) {
	read := func(starts []int, shed []float64, answered ...bool) gatewayShed {
		r := gatewayShed{shed: shed, starts: starts, ok: true, answered: make([]bool, len(shed))}
		for i := range r.answered {
			r.answered[i] = i >= len(answered) || answered[i]
			r.ok = r.ok && r.answered[i]
		}
		return r
	}
	tests := []struct {
		name       string
		start, end gatewayShed
		want       float64
		exact      bool
	}{
		{"no sheds", read([]int{1}, []float64{0}), read([]int{1}, []float64{0}), 0, true},
		{"one gateway", read([]int{1}, []float64{100}), read([]int{1}, []float64{350}), 250, true},
		{"two gateways", read([]int{1, 1}, []float64{100, 40}), read([]int{1, 1}, []float64{150, 90}), 100, true},
		// The gateway restarted: its counter fell from 500 to 30, which it
		// counted after the reset. The old process's counts after the
		// start scrape are lost, so the figure is not exact.
		{"reset", read([]int{1}, []float64{500}), read([]int{2}, []float64{30}), 30, false},
		// The same drop with the process count unseen (a reset only the
		// counter shows) is a reset too.
		{"drop without a restart seen", read([]int{1}, []float64{500}), read([]int{1}, []float64{30}), 30, false},
		// Only the second gateway restarted; the first's increase stands.
		// Summed, 600 → 230 read as no sheds at all.
		{"reset of one of two", read([]int{1, 1}, []float64{100, 500}), read([]int{1, 2}, []float64{200, 30}), 130, false},
		// The new process already counted more than the old one had: the
		// counter did not drop, but the restart is a reset all the same.
		{"restart past the old value", read([]int{1}, []float64{20}), read([]int{2}, []float64{70}), 70, false},
		// Down at the start (restarting), counting again at the end.
		{"down at start, restarted", read([]int{1}, []float64{0}, false), read([]int{2}, []float64{40}), 40, false},
		{"no answer at end", read([]int{1, 1}, []float64{10, 10}), read([]int{1, 1}, []float64{20, 0}, true, false), 10, false},
		{"no baseline", read([]int{1, 1}, []float64{10, 0}, true, false), read([]int{1, 1}, []float64{20, 900}), 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, exact := shedIncrease(tt.start, tt.end)
			if got != tt.want || exact != tt.exact {
				t.Errorf("shedIncrease = %v, exact %v; want %v, exact %v", got, exact, tt.want, tt.exact)
			}
		})
	}
}
