#!/usr/bin/env bash
# The benchmarks whose figures the README quotes. Targets are ratios measured
# within one run (gateway vs x/time/rate, gateway vs a bare reverse proxy,
# standard route idle vs under ai overload), so a noisy machine moves both
# sides together. Without the limiter matrix it takes about 2 minutes (1 min 56 s
# on the 2-core shared machine at load average 2, 2026-12-08); the matrix and
# its held-out set add their own time (the README says about a minute for the
# matrix; not timed then). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bench() { go test -run '^$' -benchmem "$@"; }

echo "== admission: BenchmarkAdmit (classify + limit + guard + bulkhead) beside x/time/rate; admit/rate of BenchmarkAdmitVsRateAllow is the ratio (goal <= 5), interleaved in one run"
bench -bench '^Benchmark(Admit|RateAllow)$' ./gateway
bench -bench '^BenchmarkAdmitVsRateAllow$' -count 3 ./gateway
echo "== gateway vs bare httputil.ReverseProxy (12,000 requests: at -benchtime 3x, 1,000, the ratio read 0.88-1.51); standard route p99 while ai is 10x overloaded"
bench -bench '^BenchmarkGatewayVsReverseProxy$' -benchtime 6000x ./gateway
bench -bench '^BenchmarkStandardUnderAIOverload$' -benchtime 3x ./gateway
echo "== per-request and per-chunk overhead beside a bare ReverseProxy, loopback (gateway/overhead_bench_test.go; ratios gateway ÷ proxy of the same run)"
# Each workload runs long enough to be measured (a few tenths of a second a
# side): 40 small chats took about 10 ms and their CPU ratio read 0.9-2.6x.
{ go test -run '^$' -benchmem -bench '^BenchmarkOverheadChat$' -benchtime 2000x ./gateway
  go test -run '^$' -benchmem -bench '^BenchmarkOverhead(Stream|Embeddings)$' -benchtime 40x ./gateway
  go test -run '^$' -benchmem -bench '^BenchmarkOverheadBigAnswer$' -benchtime 400x ./gateway
  go test -run '^$' -bench '^BenchmarkOverheadIdleStreams$' -benchtime 4x ./gateway; } | awk '
/^BenchmarkOverhead/ {
	split($1, name, "/"); hop = name[2]; sub(/-[0-9]+$/, "", hop)
	for (i = 3; i < NF; i += 2) v[name[1], hop, $(i+1)] = $i
	if (hop == "gateway") order[++n] = name[1]
	print; next
}
END {
	for (k = 1; k <= n; k++) {
		b = order[k]; line = b " gateway/proxy:"
		split("ns/op cpu-ns/op B/op allocs/op allocs/chunk heap_B/stream", units, " ")
		for (u = 1; u <= 6; u++) {
			g = v[b, "gateway", units[u]]; p = v[b, "proxy", units[u]]
			if (g != "" && p > 0) line = line sprintf("  %s %.2fx", units[u], g / p)
		}
		print line
	}
}'
echo "== building blocks (all 0 allocs/op)"
bench -bench '^Benchmark(Bulkhead|Guard|Budget)' ./gateway/admit
bench -bench '^Benchmark(LocalAllow|TimeRateAllow)$' ./gateway/ratelimit
echo "== adaptive limit: the workload matrix of issue 9 (deterministic simulation, virtual time; LEVEE_MATRIX=short for the CI subset, LEVEE_MATRIX_ALL=1 for every cell)"
go test -run '^$' -bench '^BenchmarkLimiterMatrix$' -benchtime 1x -timeout 60m ./gateway/admit | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok \|BenchmarkLimiterMatrix\)'
echo "== adaptive limit: held-out workloads, on none of the matrix's axis values (same acceptance; LEVEE_MATRIX_SEED for another seed)"
LEVEE_MATRIX=heldout go test -run '^$' -bench '^BenchmarkLimiterMatrix$' -benchtime 1x -timeout 60m ./gateway/admit | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok \|BenchmarkLimiterMatrix\)'
echo "== rate-limit decisions per store kind (redis-server, embedded \`levee redis\`, 3-master cluster), 64 concurrent callers (needs redis-server)"
bench -bench '^Benchmark(Redis|Local)Allow64$' -benchtime 1s ./gateway/ratelimit
echo "== upstream pool: tuned vs default transport"
bench -bench '^BenchmarkPoolDoTransportRatio$' ./gateway/upstream
echo "== upstream pool: P0 (attempt timeout + hedge timer per call) vs P2 throughput"
bench -bench '^BenchmarkPoolSendP0VsP2$' -benchtime 20000x ./gateway/upstream
echo "== fake model: saturated throughput vs N x C / mean"
bench -bench '^BenchmarkSaturatedThroughput$' -benchtime 1x ./fakemodel
echo "== dashboard CPU at 4 Hz: Update+View per Sample; the whole program fed one Sample every 250 ms"
bench -bench '^BenchmarkFrame$' -benchtime 80x ./tui
bench -bench '^BenchmarkProgramCPU$' -benchtime 20x ./tui
echo "== HTML report of a 30-minute run (7,200 samples): time per report (target < 2 s) and MB/report (target < 2 MB)"
bench -bench '^BenchmarkWriteFile30Min$' -benchtime 3x ./lab/htmlreport
echo "== load generator accuracy at 2000 req/s against a loopback server"
go run ./cmd/levee loadtest --rate 2000 --duration 5s
