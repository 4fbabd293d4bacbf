// Package load is Levee's open-loop load generator, in the manner of k6's
// arrival-rate executors, wrk2 and vegeta.
//
// Arrivals are scheduled by their intended time (constant spacing or a
// seeded Poisson process) whatever the responses do: a slow gateway never
// throttles the offered rate, and latency is measured from the intended time,
// so queueing anywhere — in the gateway, the client transport or the
// generator itself — shows in the numbers (no coordinated omission).
//
// Every offered request ends in exactly one outcome (a wire.Outcome; Outcomes
// lists their names): by the gateway's X-Levee-Outcome header (or the
// X-Levee-Outcome-Final trailer of a stream) when present, else by status;
// a timeout when the client deadline passes; an error for anything else.
// Arrivals that find Config.MaxOutstanding requests in flight are never sent
// and count as generator_dropped.
//
// The lab's sampler calls Generator.Tick once per tick for a Window (counts
// since the previous tick and since the start, latency quantiles from
// HdrHistograms); Generator.Totals gives the cumulative view for summaries.
package load
