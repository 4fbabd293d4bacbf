package runfiles

import "math"

type faultWindow struct {
	name       string
	start, end float64 // elapsed seconds; end < 0 while active
}

// A fault has one instance at a time, as a Toxiproxy toxic has, and the
// chaos controller reports an apply only of a fault that was not active
// and a revert only of one that was: a recording's applies and reverts of
// one fault alternate. When they do not — an apply reported while the
// fault's window is open (the dashboard's apply racing the record key's
// list of the faults already active, or an events.jsonl written so), a
// revert with no window open — faultApplied and faultReverted still make
// well-formed windows, the same for a finished run's Aggregator and a
// killed run's rebuild from events.jsonl:
//
//   - an apply while the fault's window is open joins that window, which
//     starts at the earlier of the two (the fault was active from then);
//   - a revert with no window open, when the recording has no window of
//     the fault yet, is of a fault active when the recording began: its
//     window runs from the recording's start (from) to the revert;
//   - any other revert with no window open repeats one already recorded:
//     it changes nothing.
//
// A window still open at the end of the recording is the fault active to
// the end: its summary ends there (FaultSummary.EndS) and there is no
// recovery to judge (recoveryOf).

// faultApplied is fs with the fault called name applied at at.
func faultApplied(fs []faultWindow, name string, at float64) []faultWindow {
	if i := openWindow(fs, name); i >= 0 {
		fs[i].start = math.Min(fs[i].start, at)
		return fs
	}
	return append(fs, faultWindow{name: name, start: at, end: -1})
}

// faultReverted is fs with the fault called name reverted at at, in a
// recording that began at from.
func faultReverted(fs []faultWindow, name string, at, from float64) []faultWindow {
	if i := openWindow(fs, name); i >= 0 {
		fs[i].end = math.Max(at, fs[i].start)
		return fs
	}
	for _, f := range fs {
		if f.name == name {
			return fs // a repeated revert
		}
	}
	return append(fs, faultWindow{name: name, start: from, end: math.Max(at, from)})
}

// openWindow is the index of the open window of the fault called name in
// fs, or -1.
func openWindow(fs []faultWindow, name string) int {
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].name == name && fs[i].end < 0 {
			return i
		}
	}
	return -1
}
