// Package lab runs experiments: Open wires the rooms of the lab together
// and plays an experiment's schedule on them — the supervisor (child
// processes), the load generator (package load), the chaos controller
// playing the experiment's fault timeline, the sampler (scrapes + state →
// Sample) and, when recording, the recorder (package runfiles). A Lab
// implements Controls, the dashboard's handle on it, and chaos.Env, what
// faults act on.
//
// The rooms: experiment (the schema), supervisor (children), load (open-loop
// traffic), scrape (reading /metrics), sampler (making Samples), runfiles
// (the files a run leaves, summaries and reports).
package lab
