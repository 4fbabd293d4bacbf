package runfiles

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
)

// TestThresholdResultJSON: a value that is not finite is null in
// summary.json; +Inf (a time that never came) reads back as +Inf, so a
// report of the file prints "never" as the finished run did (it read
// "n/a"), and NaN as NaN.
func TestThresholdResultJSON(t *testing.T) {
	for _, v := range []float64{math.Inf(1), math.NaN()} {
		b, err := json.Marshal(ThresholdResult{Expr: "<= 5", Value: v, Note: "never"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"value":null`) {
			t.Errorf("%v marshals as %s", v, b)
		}
		var r ThresholdResult
		if err := json.Unmarshal(b, &r); err != nil || r.Note != "never" || !(r.Value == v || math.IsNaN(v) && math.IsNaN(r.Value)) {
			t.Errorf("%v: round trip %s: %+v %v", v, b, r, err)
		}
	}
	// A summary written before "never" was kept reads its null as NaN.
	var old ThresholdResult
	if err := json.Unmarshal([]byte(`{"expr":"> 5","value":null,"pass":true}`), &old); err != nil || !math.IsNaN(old.Value) {
		t.Errorf("an older null: %+v %v", old, err)
	}
	b, _ := json.Marshal(ThresholdResult{Expr: "== 0", Value: 0, Pass: true})
	if string(b) != `{"expr":"== 0","value":0,"pass":true}` {
		t.Errorf("finite value: %s", b)
	}
}

// Every metric a threshold may name has a finite value on a real summary
// (limit_settle_s only with a node_kill).
func TestSummaryMetricCoversEveryThreshold(t *testing.T) {
	s := Summary{
		Offered:    10,
		Outcomes:   map[string]uint64{wire.OutcomeOK.String(): 8, wire.OutcomeError.String(): 1, wire.OutcomeTimeout.String(): 1},
		ByPriority: map[string]PrioritySummary{"P0": {Offered: 5, SuccessRate: 1}, "P1": {SuccessRate: 0.5}, "P2": {SuccessRate: 0}},
		Faults:     []FaultSummary{{Fault: "node_kill", LiveSlots: 32, LimitSettleS: 2, Settled: true, P0SuccessRate: new(0.99)}},
		ShedCheck:  ShedCheck{Exact: true},
		Redis: RedisSummary{Kind: "cluster", Addr: "127.0.0.1:7000", Fallbacks: 12,
			Failovers: []RedisFailover{{Killed: "127.0.0.1:7000", AtS: 5, By: "127.0.0.1:7003", AfterS: 1.5}}},
		RateLimit: &RateLimitSummary{ByPriority: map[string]GlobalLimitCheck{"P2": {
			LimitRPS: 100, Steady: LimitSpan{Seconds: 10, AdmittedRPS: 103, Error: 0.03},
			Faults: LimitSpan{Seconds: 5, AdmittedRPS: 90, Error: -0.1}}}},
		Agent:    &AgentSummary{Offered: 4, Answered: 3, SuccessRate: 0.75, MaxLevel: "red", LevelsReached: 3},
		Recovery: &RecoverySummary{FaultsEndS: 10, RecoveryS: 1.5, Recovered: true, GoodputRatio: 0.93},
	}
	for name := range experiment.ThresholdMetrics {
		v, note := s.Metric(name)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %v (%s)", name, v, note)
		}
	}
	if v, _ := s.Metric("p1_success_rate"); v != 0.5 {
		t.Errorf("p1_success_rate = %v", v)
	}
	if v, _ := s.Metric("error_rate"); v != 0.1 {
		t.Errorf("error_rate = %v", v)
	}
	s.Faults[0].Settled = false
	if v, note := s.Metric("limit_settle_s"); !math.IsInf(v, 1) || note == "" {
		t.Errorf("unsettled limit: %v %q", v, note)
	}
	s.Faults = nil
	if v, _ := s.Metric("limit_settle_s"); !math.IsNaN(v) {
		t.Errorf("no kill: %v", v)
	}
	if v, _ := s.Metric("global_limit_error"); v != 0.03 {
		t.Errorf("global_limit_error = %v, want 0.03", v)
	}
	if v, _ := s.Metric("global_limit_error_during_faults"); v != 0.1 {
		t.Errorf("global_limit_error_during_faults = %v, want 0.1 (|−10 %%|)", v)
	}
	if v, _ := s.Metric("redis_failover_s"); v != 1.5 {
		t.Errorf("redis_failover_s = %v", v)
	}
	s.Redis.Failovers = append(s.Redis.Failovers, RedisFailover{Killed: "127.0.0.1:7001", Error: "timeout"})
	if v, note := s.Metric("redis_failover_s"); !math.IsInf(v, 1) || note == "" {
		t.Errorf("a kill without failover: %v %q, want +Inf and a note", v, note)
	}
	s.Redis = RedisSummary{Kind: "off"}
	if v, note := s.Metric("redis_fallbacks"); !math.IsNaN(v) || note == "" {
		t.Errorf("redis_fallbacks without Redis: %v %q, want NaN and a note", v, note)
	}
	if v, _ := s.Metric("agent_max_level"); v != 2 {
		t.Errorf("agent_max_level = %v, want 2 (red)", v)
	}
	s.Agent = nil
	if v, note := s.Metric("agent_task_success_rate"); !math.IsNaN(v) || note == "" {
		t.Errorf("no agents: %v %q", v, note)
	}
}

func TestReadJSONL(t *testing.T) {
	type row struct{ A int }
	tests := []struct {
		name, in string
		want     int
		err      string
	}{
		{"empty", "", 0, ""},
		{"whole lines", "{\"A\":1}\n{\"A\":2}\n", 2, ""},
		{"blank lines", "{\"A\":1}\n\n{\"A\":2}\n", 2, ""},
		{"torn last line", "{\"A\":1}\n{\"A\":2}\n{\"A\":", 2, ""},
		{"unterminated but whole", "{\"A\":1}\n{\"A\":2}", 2, ""},
		{"bad middle line", "{\"A\":1}\nnot json\n{\"A\":2}\n", 1, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJSONL[row](strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("%d rows, want %d", len(got), tt.want)
			}
		})
	}
}

func TestJSONLWriterAndAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	w, err := createJSONL(filepath.Join(dir, "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Write(map[string]int{"A": i}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if err := w.Write(1); err == nil {
		t.Error("write after close succeeded")
	}
	if n := countLines(filepath.Join(dir, "x.jsonl")); n != 3 {
		t.Errorf("%d lines", n)
	}
	p := filepath.Join(dir, "s.json")
	if err := writeJSONAtomic(p, map[string]int{"v": 1}); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONAtomic(p, map[string]int{"v": 2}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `"v": 2`) {
		t.Errorf("content %s", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("temp files left: %v", ents)
	}
}

func hist(values ...int64) *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
	for _, v := range values {
		h.RecordValue(v)
	}
	return h
}

func totals(elapsed time.Duration, offered uint64, outcomes map[string]uint64, lat ...int64) load.Totals {
	t := load.Totals{Elapsed: elapsed, Offered: offered, Outcomes: map[string]uint64{}, ByPriority: map[string]load.PriorityTotals{}, Admitted: hist(lat...)}
	for _, o := range load.Outcomes {
		t.Outcomes[o] = outcomes[o]
	}
	for _, p := range load.Priorities {
		pt := load.PriorityTotals{Outcomes: map[string]uint64{}, Latency: hist()}
		if p == "P0" {
			pt.Offered = offered
			pt.Latency = hist(lat...)
			for o, n := range outcomes {
				pt.Outcomes[o] = n
			}
		}
		t.ByPriority[p] = pt
	}
	return t
}

// sampleAt builds a sample for the aggregator tests.
func sampleAt(start time.Time, el float64, offeredRPS, capRPS, limit float64, liveSlots []float64, p0off, p0ok uint64, rss float64) Sample {
	s := Sample{
		Time: start.Add(time.Duration(el * float64(time.Second))), Elapsed: el, OfferedRPS: offeredRPS, CapacityRPS: capRPS,
		ConcurrencyLimit: limit, RSSBytes: rss,
		ByPriority: map[string]PrioritySample{"P0": {OfferedTotal: p0off, OKTotal: p0ok}},
	}
	for i, sl := range liveSlots {
		s.Nodes = append(s.Nodes, NodeSample{Index: i, Up: sl > 0, Slots: sl})
	}
	return s
}

func TestAggregatorSummary(t *testing.T) {
	start := time.Unix(1000, 0)
	exp, err := experiment.ParseExperiment([]byte("name: agg\nduration: 20s\nclient_timeout: 1s\nthresholds: {limit_settle_s: \"<= 5\", p0_success_during_faults: \">= 0.9\", goodput_ratio: \">= 0.9\", rss_growth_mb: \"<= 1\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(start, 100)
	a.Rate(start.Add(10*time.Second), 300) // 10 s at 100, then 300
	a.FaultApplied("node_kill", start.Add(10*time.Second))
	a.FaultReverted("node_kill", start.Add(18*time.Second))
	var p0off, p0ok, p0fin uint64
	for i := 1; i <= 80; i++ { // 20 s at 4 Hz
		el := float64(i) * 0.25
		slots := []float64{16, 16, 16}
		limit := 48.0
		capRPS := 300.0
		if el > 10 && el <= 18 {
			slots = []float64{16, 0, 16}
			capRPS = 200
			switch {
			case el < 12:
				limit = 45 // still falling
			case el < 12.5:
				limit = 20 // a short probe: the median ignores it
			default:
				limit = 33
			}
		}
		p0off += 10
		p0fin += 10
		p0ok += 10
		if el > 10 && el <= 11 {
			p0ok -= 1 // 10 % of P0 lost just after the kill
		}
		rss := 20.0 * (1 << 20)
		if el > 15 {
			rss += 3 << 20 // 3 MB more after the fault started
		}
		offered := 100.0
		if el > 10 {
			offered = 300
		}
		a.Add(sampleAt(start, el, offered, capRPS, limit, slots, p0off, p0ok, rss), 0.25, 0, false, p0fin)
	}
	// 10 s at 100 req/s (under capacity) then 10 s at 300 req/s against a
	// capacity of 200 for 8 s and 300 for 2 s: usable = 1000 + 1600 + 600.
	ok := uint64(0.95 * 3200)
	tot := totals(20*time.Second, 4000, map[string]uint64{wire.OutcomeOK.String(): ok, wire.OutcomeShedOverload.String(): 4000 - ok}, 100000)
	s := a.Summarize(SummaryInput{Exp: exp, Totals: tot, GatewayShed: 4000 - uint64(ok), ShedExact: true, End: start.Add(20 * time.Second)})
	if math.Abs(s.GoodputRatio-0.95) > 0.01 {
		t.Errorf("goodput ratio %v, want 0.95", s.GoodputRatio)
	}
	if math.Abs(s.TargetRPS-200) > 1e-6 || math.Abs(s.AchievedRateError-0) > 1e-9 {
		t.Errorf("target %v error %v", s.TargetRPS, s.AchievedRateError)
	}
	if s.Unaccounted != 0 || s.ShedCheck.Mismatch != 0 || !s.ShedCheck.Exact {
		t.Errorf("accounting %d %+v", s.Unaccounted, s.ShedCheck)
	}
	if len(s.Faults) != 1 {
		t.Fatalf("faults %+v", s.Faults)
	}
	f := s.Faults[0]
	if f.LiveSlots != 32 || !f.Settled || f.LimitSettleS < 2 || f.LimitSettleS > 3.5 {
		t.Errorf("settle: %+v", f)
	}
	if f.P0SuccessRate == nil || math.Abs(*f.P0SuccessRate-(1-4.0/(8*4*10+4*10))) > 0.001 {
		t.Errorf("P0 during fault %v", f.P0SuccessRate)
	}
	if s.Gateway.RSSGrowthMB != 3 || s.Thresholds["rss_growth_mb"].Pass {
		t.Errorf("rss growth %v %+v", s.Gateway.RSSGrowthMB, s.Thresholds["rss_growth_mb"])
	}
	for _, n := range []string{"limit_settle_s", "p0_success_during_faults", "goodput_ratio"} {
		if !s.Thresholds[n].Pass {
			t.Errorf("%s: %+v", n, s.Thresholds[n])
		}
	}
	if s.Pass {
		t.Error("summary passes with a failed threshold")
	}
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// TestShedCheck: the gateways' sheds must lie in [client, client + the
// client's timeouts]; a request the client gave up on may be shed after.
func TestShedCheck(t *testing.T) {
	start := time.Unix(1000, 0)
	exp, err := experiment.ParseExperiment([]byte("name: shed\nduration: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	shed, timeout := wire.OutcomeShedRateLimit.String(), wire.OutcomeTimeout.String()
	tests := []struct {
		name              string
		shed, timeouts    uint64 // the client's
		gateway           uint64
		inDoubt, mismatch uint64
	}{
		{"equal", 40, 0, 40, 0, 0},
		{"gateway missed sheds", 40, 0, 35, 0, 5},
		{"gateway counted more, no timeouts", 40, 0, 42, 0, 2},
		{"shed after the client gave up", 40, 10, 47, 10, 0},
		{"every timeout shed", 40, 10, 50, 10, 0},
		{"more than the timeouts explain", 40, 10, 53, 10, 3},
		{"missed sheds, timeouts or not", 40, 10, 38, 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tot := totals(10*time.Second, 100, map[string]uint64{wire.OutcomeOK.String(): 100 - tt.shed - tt.timeouts, shed: tt.shed, timeout: tt.timeouts})
			s := NewAggregator(start, 10).Summarize(SummaryInput{Exp: exp, Totals: tot, GatewayShed: tt.gateway, ShedExact: true, End: start.Add(10 * time.Second)})
			want := ShedCheck{Gateway: tt.gateway, Client: tt.shed, InDoubt: tt.inDoubt, Mismatch: tt.mismatch, Exact: true}
			if s.ShedCheck != want {
				t.Errorf("shed check %+v, want %+v", s.ShedCheck, want)
			}
			if v, _ := s.Metric("shed_mismatch"); v != float64(tt.mismatch) {
				t.Errorf("shed_mismatch %v, want %d", v, tt.mismatch)
			}
		})
	}
}

// The summary's max RSS and RSS growth are one gateway's (the largest's,
// what the per-gateway memory limit applies to), not the gateways' sum: 3
// gateways at 100 MB rising to 200 MB summed to 300 → 600 MB. Older
// samples without rss_max_bytes still count their rss_bytes. The max heap
// likewise (heap_max_bytes, else heap_bytes).
func TestSummaryRSSIsPerGateway(t *testing.T) {
	start := time.Unix(1000, 0)
	exp, err := experiment.ParseExperiment([]byte("name: agg\nduration: 10s\ngateway: {count: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(start, 100)
	for i := 1; i <= 40; i++ {
		el := float64(i) * 0.25
		perGW := 100.0
		if el >= 5 {
			perGW = 200
		}
		s := sampleAt(start, el, 100, 300, 48, []float64{16, 16, 16}, 0, 0, 0)
		s.RSSBytes, s.RSSMaxBytes = 3*perGW*(1<<20), perGW*(1<<20)
		s.HeapBytes, s.HeapMaxBytes = 3*perGW/2*(1<<20), perGW/2*(1<<20)
		a.Add(s, 0.25, 0, false, 0)
	}
	s := a.Summarize(SummaryInput{Exp: exp, Totals: totals(10*time.Second, 1000, nil), ShedExact: true, End: start.Add(10 * time.Second)})
	if s.Gateway.MaxRSSBytes != 200<<20 || s.Gateway.RSSGrowthMB != 100 {
		t.Errorf("max RSS %v MB, growth %v MB; want 200 and 100 (one gateway's)", s.Gateway.MaxRSSBytes/(1<<20), s.Gateway.RSSGrowthMB)
	}
	if s.Gateway.MaxHeapBytes != 100<<20 {
		t.Errorf("max heap %v MB, want 100 (one gateway's, not the 300 MB sum)", s.Gateway.MaxHeapBytes/(1<<20))
	}
	old := Sample{RSSBytes: 300 << 20}
	if got := old.GatewayRSS(); got != 300<<20 {
		t.Errorf("an older sample's GatewayRSS %v, want its rss_bytes", got)
	}
	if PerGatewayRSS([]Sample{old}) {
		t.Error("older samples read as carrying the largest gateway's RSS")
	}
	old.HeapBytes = 90 << 20
	if got := old.GatewayHeap(); got != 90<<20 || PerGatewayHeap([]Sample{old}) {
		t.Errorf("an older sample's GatewayHeap %v, want its heap_bytes, not read as per gateway", got)
	}
}

// max_goroutines is the gateways' goroutines summed (the sampler adds them
// up; no per-gateway count is kept), and its threshold's description says
// so: it said "largest gateway goroutine count seen", which a run of three
// gateways at 100 each (max_goroutines 300) does not read as.
func TestSummaryGoroutinesAreTheGatewaysSum(t *testing.T) {
	start := time.Unix(1000, 0)
	exp, err := experiment.ParseExperiment([]byte("name: agg\nduration: 10s\ngateway: {count: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(start, 100)
	for i := 1; i <= 40; i++ {
		s := sampleAt(start, float64(i)*0.25, 100, 300, 48, []float64{16, 16, 16}, 0, 0, 0)
		s.Goroutines = 3 * 100
		a.Add(s, 0.25, 0, false, 0)
	}
	s := a.Summarize(SummaryInput{Exp: exp, Totals: totals(10*time.Second, 1000, nil), ShedExact: true, End: start.Add(10 * time.Second)})
	if s.Gateway.MaxGoroutines != 300 {
		t.Errorf("max goroutines %v, want 300 (the three gateways' sum)", s.Gateway.MaxGoroutines)
	}
	if doc := experiment.ThresholdMetrics["max_goroutines"]; !strings.Contains(doc, "summed over the gateways") {
		t.Errorf("max_goroutines is described as %q: it does not say it is the gateways' sum", doc)
	}
}
