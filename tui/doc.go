// Package tui is Levee's live dashboard: a Bubble Tea program over a running
// lab. It reads only lab.Samples and calls only lab.Controls; it never starts
// processes or load itself.
//
// The model is driven by the Samples channel (one redraw per Sample, ≥ 4 Hz):
// Update folds each Sample into per-chart histories and re-renders the charts;
// View only composes what Update prepared and never calls the lab. Key
// handlers call Controls methods, which return quickly by contract; quitting
// calls Controls.Stop with a deadline on a command goroutine and shows
// "stopping…" until it returns.
//
// Charts show only numbers measured in Samples. A tick whose gateway scrape
// failed (Sample.GatewayStale) leaves a gap in the gateway charts, their
// titles say STALE and their current values read "—".
package tui
