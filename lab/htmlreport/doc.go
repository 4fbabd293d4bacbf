// Package htmlreport renders recorded runs as one self-contained HTML page:
// every chart on one shared time axis, with fault bands, narration marks and
// threshold lines, a side-by-side summary table with differences, and hover
// values. The page needs no network: its styles and its small script are
// embedded, and the charts are SVG drawn here in Go, so it reads and prints
// even with scripts off.
//
// Several runs are overlaid on the same axes, time counted from each run's
// start (A/B): series keep their colour and each run has its own line style.
//
// Latency percentiles over time come from the per-tick HdrHistograms in
// samples.jsonl, merged over each plotted interval, never averaged. Rates
// come from the cumulative counters, so an interval's rate is exact whatever
// its length.
package htmlreport
