// Package sampler owns the making of a Sample: Next merges one tick's
// scrapes of every child and the load generator's window into the
// runfiles.Sample the dashboard and the recorder read, as a pure function of
// the previous State and the tick's Input. The lab gathers the Input (the
// scrapes are its I/O) and hands each Output to its sinks: the recorder and
// the dashboard's subscribers.
package sampler
