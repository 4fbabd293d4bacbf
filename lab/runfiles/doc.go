// Package runfiles owns the files a run leaves in its folder: run.json
// (RunInfo), samples.jsonl (one Sample per tick), events.jsonl (Events),
// summary.json (Summary, with the thresholds evaluated) and report.txt.
// It writes them (Recorder, Aggregator), reads them back (ReadRun,
// ReadSamples, ReadEvents) and prints runs side by side (WriteReport).
//
// It is a leaf of the lab: it imports the experiment schema, the load
// generator's totals and the chaos catalogue, never the lab itself, so a
// report package (HTML pictures of a run) can import it, and the Recorder
// runs such reports through ReportWriter without an import cycle. The file
// formats are a contract: fields may be added, never renamed or removed.
package runfiles
