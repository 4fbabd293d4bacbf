// Package tui is Levee's live dashboard: a Bubble Tea program over a running
// lab. It reads only runfiles.Samples and calls only lab.Controls; it never
// starts processes or load itself.
//
// The model is driven by the Samples channel (one redraw per Sample, ≥ 4 Hz):
// Update folds each Sample into per-chart histories and re-renders the charts;
// View only composes what Update prepared and never calls the lab. Key
// handlers call the Controls methods that return at once directly; the ones
// that do file or process I/O run as commands, off the UI goroutine:
// recording (r) calls StartRecording or StopRecording in a tea.Cmd and shows
// the result when it comes back, and quitting calls Controls.Stop with a
// deadline and shows "stopping…" until it returns.
//
// Charts show only numbers measured in Samples. A tick whose gateway scrape
// failed (Sample.GatewayStale) leaves a gap in the gateway charts, their
// titles say STALE and their current values read "—".
package tui
