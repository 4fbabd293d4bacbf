// Package scrape reads Prometheus text exposition from a process's /metrics
// and answers the few questions the lab asks of it: sums, single values,
// maxima, breakdowns by one label, histogram quantiles and counter deltas.
package scrape
