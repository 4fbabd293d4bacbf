package sampler

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/scrape"
)

func TestServiceWindow(t *testing.T) {
	var w serviceWindow
	if _, ok := w.mean(); ok {
		t.Fatal("an empty window has a mean")
	}
	w.add(4.9, 49) // 0.1 s each, but too few to trust
	if _, ok := w.mean(); ok {
		t.Fatal("49 observations gave a mean")
	}
	w.add(15.1, 1) // one long stream
	m, ok := w.mean()
	if !ok || math.Abs(m-0.4) > 1e-9 {
		t.Fatalf("mean = %v, %v; want 0.4 (20 s over 50 requests)", m, ok)
	}
	// The ring forgets the oldest scrapes: after a full turn of quiet
	// scrapes nothing is left.
	for range len(w.sum) {
		w.add(0, 0)
	}
	if _, ok := w.mean(); ok {
		t.Fatal("a window of empty scrapes has a mean")
	}
	// A full turn of steady scrapes gives their mean.
	for range len(w.sum) {
		w.add(2.2, 10)
	}
	if m, ok := w.mean(); !ok || math.Abs(m-0.22) > 1e-9 {
		t.Fatalf("steady mean = %v, %v; want 0.22", m, ok)
	}
}

func families(t *testing.T, text string) scrape.Families {
	t.Helper()
	f, err := scrape.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const gatewayText = `# TYPE levee_shed_total counter
levee_shed_total{reason="overload",priority="P2"} %d
# TYPE levee_overload_level gauge
levee_overload_level %d
# TYPE levee_inflight gauge
levee_inflight{class="ai"} 7
# TYPE levee_concurrency_limit gauge
levee_concurrency_limit{class="ai"} 12
`

const nodeText = `# TYPE levee_fakemodel_in_service gauge
levee_fakemodel_in_service 4
# TYPE levee_fakemodel_slots gauge
levee_fakemodel_slots 4
# TYPE levee_fakemodel_mean_service_seconds gauge
levee_fakemodel_mean_service_seconds 0.2
# TYPE levee_fakemodel_requests_total counter
levee_fakemodel_requests_total{outcome="ok"} %d
`

// Next is a pure function of (State, Input): shed rates and completions are
// deltas between two scrapes, a restarted gateway counts from zero, and the
// previous State is left as it was.
func TestNextIsPure(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	in := func(at time.Time, gwStarts int, shed, level, done int) Input {
		return Input{
			Now: at, Start: t0, Tick: tick,
			Window:   load.Window{Duration: tick, Offered: 10, OfferedTotal: 10},
			Gateways: []Child{{Scrape: families(t, fmt.Sprintf(gatewayText, shed, level)), At: at, Starts: gwStarts, Up: true}},
			Nodes:    []Child{{Scrape: families(t, fmt.Sprintf(nodeText, done)), At: at, Starts: 1, Up: true, Addr: "n0"}},
			Defenses: map[string]bool{"guard": true},
		}
	}
	s0 := NewState(1, 1)
	_, s1 := Next(s0, in(t0, 1, 100, 1, 50))
	out, s2 := Next(s1, in(t0.Add(time.Second), 1, 140, 2, 70))
	smp := out.Sample
	if smp.ShedRPSByReason["overload"] != 40 || smp.ShedRPSByPriority["P2"] != 40 {
		t.Errorf("shed rates %v %v, want 40/s", smp.ShedRPSByReason, smp.ShedRPSByPriority)
	}
	if out.Completions != 20 || !out.Saturated || smp.CapacityRPS != 20 {
		t.Errorf("completions %v saturated %v capacity %v", out.Completions, out.Saturated, smp.CapacityRPS)
	}
	if smp.Level != "red" || smp.Inflight != 7 || smp.ConcurrencyLimit != 12 || smp.Elapsed != 1 {
		t.Errorf("sample %+v", smp)
	}
	if s2.ShedTotal() != 140 || s1.ShedTotal() != 100 || s0.ShedTotal() != 0 {
		t.Errorf("shed totals %v %v %v", s0.ShedTotal(), s1.ShedTotal(), s2.ShedTotal())
	}
	// The same inputs give the same outputs: s1 was not changed by Next.
	again, _ := Next(s1, in(t0.Add(time.Second), 1, 140, 2, 70))
	if !reflect.DeepEqual(again, out) {
		t.Errorf("Next(s1, …) changed between calls:\n%+v\n%+v", again, out)
	}
	// A restarted gateway (a new Starts) counts from zero: its 5 sheds are
	// new, and the total keeps the 140 of the old process. Its start time
	// is unknown here: the first scrape is a baseline, with no rate.
	out3, s3 := Next(s2, in(t0.Add(2*time.Second), 2, 5, 0, 90))
	if s3.ShedTotal() != 145 || out3.Sample.ShedRPSByReason["overload"] != 0 {
		t.Errorf("after a restart: total %v, rate %v", s3.ShedTotal(), out3.Sample.ShedRPSByReason)
	}
	// No current scrape: stale, and the lab's defenses stand in.
	stale := in(t0.Add(3*time.Second), 2, 5, 0, 90)
	stale.Gateways[0].Scrape = nil
	out4, _ := Next(s3, stale)
	if !out4.Sample.GatewayStale || !out4.Sample.Defenses["guard"] {
		t.Errorf("stale sample %+v", out4.Sample)
	}
}

// BenchmarkEncodeHist is the sampler's cost of one tick's histogram in
// samples.jsonl (HdrHistogram V2 compressed): 500 latencies between 0.1
// and 2 s. It encodes four per tick (admitted, P0, P1, P2).
func BenchmarkEncodeHist(b *testing.B) {
	h := hdrhistogram.New(1, 600e6, 3)
	for i := range 500 {
		_ = h.RecordValue(int64(100e3 * math.Pow(20, float64(i)/500)))
	}
	p := hdrhistogram.NewPacked(1, 600e6, 3)
	p.MergeFrom(h)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(encodeHist(p))
	}
	b.ReportMetric(float64(n), "bytes/hist")
}

const upstreamText = `# TYPE levee_retries_total counter
levee_retries_total{priority="P0",result="sent"} %d
levee_retries_total{priority="P2",result="sent"} %d
levee_retries_total{priority="P2",result="denied"} 50
# TYPE levee_upstream_hedges_total counter
levee_upstream_hedges_total{result="sent"} %d
levee_upstream_hedges_total{result="won"} 1
# TYPE levee_upstream_ejection_state gauge
levee_upstream_ejection_state{node="http://127.0.0.1:9001"} 0
levee_upstream_ejection_state{node="http://127.0.0.1:9002"} %d
`

// The gateways' retries and hedges become per-second rates of what was
// sent (denied retries and won hedges are not sends), summed over
// gateways; a node's ejection state is the most severe any gateway with a
// current scrape reports, matched by address, and unknown without one.
func TestNextUpstream(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	gw := func(at time.Time, p0, p2, hedges, ejected int) Child {
		return Child{Scrape: families(t, fmt.Sprintf(upstreamText, p0, p2, hedges, ejected)), At: at, Starts: 1, Up: true}
	}
	node := func(addr string) Child {
		return Child{Scrape: families(t, fmt.Sprintf(nodeText, 0)), At: t0, Starts: 1, Up: true, Addr: addr}
	}
	in := func(at time.Time, gws ...Child) Input {
		return Input{Now: at, Start: t0, Tick: tick, Window: load.Window{Duration: tick},
			Gateways: gws, Nodes: []Child{node("127.0.0.1:9001"), node("127.0.0.1:9002"), node("127.0.0.1:9003")}}
	}
	_, s1 := Next(NewState(2, 3), in(t0, gw(t0, 10, 20, 4, 0), gw(t0, 0, 0, 0, 0)))
	t1 := t0.Add(2 * time.Second)
	out, _ := Next(s1, in(t1, gw(t1, 14, 30, 6, 1), gw(t1, 2, 0, 1, 2)))
	smp := out.Sample
	if smp.RetryRPS != 8 || smp.HedgeRPS != 1.5 {
		t.Errorf("retries %v/s hedges %v/s, want 8 and 1.5", smp.RetryRPS, smp.HedgeRPS)
	}
	want := []string{wire.EjectionInRotation, wire.EjectionEjected, ""}
	for i, n := range smp.Nodes {
		if n.Ejection != want[i] {
			t.Errorf("node %s: ejection %q, want %q", n.Addr, n.Ejection, want[i])
		}
	}
	// Without a current scrape no gateway says anything about the nodes.
	stale := in(t1.Add(time.Second), Child{Starts: 1, Up: true}, Child{Starts: 1, Up: true})
	out, _ = Next(s1, stale)
	for _, n := range out.Sample.Nodes {
		if n.Ejection != "" {
			t.Errorf("node %s: ejection %q from no scrape", n.Addr, n.Ejection)
		}
	}
}

// The first scrape of a new process (a restarted gateway or node, scraped
// for the first time some ticks after it started) has counters that count
// from its start: their rate is over the time since that start
// (process_start_time_seconds), never over one tick. Dividing by the tick
// made a restarted gateway's shed rate and a node's completions peak at
// many times what the process could do.
func TestFirstScrapeOfANewProcess(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	const restartedText = `# TYPE process_start_time_seconds gauge
process_start_time_seconds %d
# TYPE levee_shed_total counter
levee_shed_total{reason="overload",priority="P2"} %d
# TYPE levee_admitted_total counter
levee_admitted_total{class="ai",priority="P0"} %d
levee_admitted_total{class="stream",priority="P2"} %d
# TYPE levee_fakemodel_requests_total counter
levee_fakemodel_requests_total{outcome="ok"} %d
# TYPE levee_fakemodel_slots gauge
levee_fakemodel_slots 4
`
	in := func(at time.Time, starts, shed, done int) Input {
		// Both processes started 2 s before this scrape.
		f := families(t, fmt.Sprintf(restartedText, at.Add(-2*time.Second).Unix(), shed, shed/2, shed/2, done))
		return Input{Now: at, Start: t0, Tick: tick, Window: load.Window{Duration: tick},
			Gateways: []Child{{Scrape: f, At: at, Starts: starts, Up: true}},
			Nodes:    []Child{{Scrape: f, At: at, Starts: starts, Up: true, Addr: "n0"}}}
	}
	_, s1 := Next(NewState(1, 1), in(t0, 1, 100, 100))
	// Restarted; scraped first 2 s after the new start: 400 sheds, 60
	// completions since then.
	out, s2 := Next(s1, in(t0.Add(3*time.Second), 2, 400, 60))
	if got := out.Sample.ShedRPSByReason["overload"]; got != 200 {
		t.Errorf("restarted gateway's shed rate %v/s, want 200 (400 over the 2 s since it started)", got)
	}
	if out.Completions != 30 {
		t.Errorf("restarted node's completions %v/s, want 30 (60 over 2 s)", out.Completions)
	}
	if s2.ShedTotal() != 500 {
		t.Errorf("shed total %v, want 500", s2.ShedTotal())
	}
	if out.Sample.AdmittedRPS != 200 || out.Sample.AdmittedTotal != 500 {
		t.Errorf("restarted gateway: admitted %v/s (want 200), total %v (want 100 + 400)", out.Sample.AdmittedRPS, out.Sample.AdmittedTotal)
	}
	// The next scrape of the same process: the delta over the time between.
	out, _ = Next(s2, in(t0.Add(4*time.Second), 2, 450, 90))
	if got := out.Sample.ShedRPSByReason["overload"]; got != 50 || out.Completions != 30 {
		t.Errorf("next scrape: shed %v/s, completions %v/s; want 50 and 30", got, out.Completions)
	}
}

// The admitted rate is the gateways' count of admissions over the scrape
// interval, not the admitted requests the clients saw end: a gateway's
// OOM kill ends thousands of admitted requests in one tick (errors and
// timeouts), and counting them then read as an admission rate no gateway
// reached (27k req/s in a lab that admits a few thousand).
func TestAdmittedRateIsTheGateways(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	const text = `# TYPE levee_admitted_total counter
levee_admitted_total{class="ai",priority="P1"} %d
`
	in := func(at time.Time, admitted int, ended map[string]uint64) Input {
		return Input{Now: at, Start: t0, Tick: tick, Window: load.Window{Duration: tick, Outcomes: ended},
			Gateways: []Child{{Scrape: families(t, fmt.Sprintf(text, admitted)), At: at, Starts: 1, Up: true}}}
	}
	_, s1 := Next(NewState(1, 0), in(t0, 1000, nil))
	// 6,000 admitted requests end at once as errors; the gateway admitted
	// 250 in the quarter second.
	out, _ := Next(s1, in(t0.Add(tick), 1250, map[string]uint64{wire.OutcomeError.String(): 6000}))
	if out.Sample.AdmittedRPS != 1000 || out.Sample.AdmittedTotal != 1250 {
		t.Errorf("admitted %v/s, total %v; want 1000/s (250 in 0.25 s) and 1250", out.Sample.AdmittedRPS, out.Sample.AdmittedTotal)
	}
	if out.Sample.OutcomeRPS[wire.OutcomeError.String()] != 24000 {
		t.Errorf("errors %v/s, want the 24000/s the clients saw end", out.Sample.OutcomeRPS[wire.OutcomeError.String()])
	}
}

// TestSuccessFinished: a priority's success rate comes with the finished
// requests it is taken over, so a stall (nothing finished in the window)
// is told apart from 100 %.
func TestSuccessFinished(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := time.Second
	st := NewState(1, 1)
	in := func(at time.Time, ok, fin uint64) Input {
		w := load.Window{Duration: tick, ByPriority: map[string]load.PriorityWindow{}}
		w.ByPriority["P0"] = load.PriorityWindow{OK: ok, Finished: fin}
		return Input{Now: at, Start: t0, Tick: tick, Window: w}
	}
	for i, tc := range []struct {
		ok, fin  uint64
		rate     float64
		finished uint64
	}{
		{0, 0, 1, 0},    // nothing yet: the convention, flagged
		{3, 4, 0.75, 4}, // 3 of 4
		{0, 0, 0.75, 4}, // a quiet tick: the window still holds the 4
		{0, 0, 0.75, 4},
		{0, 0, 1, 0}, // three ticks (SuccessWindow) with nothing: unmeasured
	} {
		var out Output
		out, st = Next(st, in(t0.Add(time.Duration(i+1)*tick), tc.ok, tc.fin))
		ps := out.Sample.ByPriority["P0"]
		if ps.SuccessRate != tc.rate || ps.SuccessFinished != tc.finished {
			t.Errorf("tick %d: rate %v over %d finished; want %v over %d", i, ps.SuccessRate, ps.SuccessFinished, tc.rate, tc.finished)
		}
	}
}

// The client-side rates are the window's counts over the window's real
// length. A tick that fires late is followed by an early one (the ticker
// keeps its schedule): the short window's counts over the nominal tick
// read as a dip (150 arrivals in 150 ms at 1,000/s showed 600/s). Only
// the run's closing window, a few milliseconds long, is taken over a tick.
// The window's length is kept in the sample (window_s).
func TestRatesOverTheRealWindow(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	ok := wire.OutcomeOK.String()
	for _, tc := range []struct {
		window          time.Duration
		offered, done   uint64
		offRPS, goodRPS float64
	}{
		{tick, 250, 200, 1000, 800},
		{350 * time.Millisecond, 350, 280, 1000, 800}, // a late tick
		{150 * time.Millisecond, 150, 120, 1000, 800}, // the early one after it
		{5 * time.Millisecond, 5, 4, 20, 16},          // the closing window: over one tick
	} {
		in := Input{Now: t0.Add(time.Second), Start: t0, Tick: tick,
			Window: load.Window{Duration: tc.window, Offered: tc.offered, Outcomes: map[string]uint64{ok: tc.done}}}
		out, _ := Next(NewState(0, 0), in)
		smp := out.Sample
		if math.Abs(smp.OfferedRPS-tc.offRPS) > 1e-9 || math.Abs(smp.GoodputRPS-tc.goodRPS) > 1e-9 || math.Abs(smp.OutcomeRPS[ok]-tc.goodRPS) > 1e-9 {
			t.Errorf("window %v with %d offered, %d ok: offered %v/s, goodput %v/s, ok %v/s; want %v and %v",
				tc.window, tc.offered, tc.done, smp.OfferedRPS, smp.GoodputRPS, smp.OutcomeRPS[ok], tc.offRPS, tc.goodRPS)
		}
		// The window is recorded as it was (a finished run's summary and
		// a killed run's rebuild weigh the tick by it).
		if smp.WindowS != tc.window.Seconds() {
			t.Errorf("window %v recorded as window_s %v", tc.window, smp.WindowS)
		}
	}
}

// A new process's first rate is over the time since the supervisor
// started it, not since its process_start_time_seconds: that is the boot
// time in whole seconds plus the start's clock ticks, so it reads up to a
// second early (0.37 s on the build machine). A gateway restarted 0.25 s
// before its first scrape read its shed rate at 40 % of the truth.
func TestFirstRateIsOverTheKnownStart(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	const text = `# TYPE process_start_time_seconds gauge
process_start_time_seconds %g
# TYPE levee_shed_total counter
levee_shed_total{reason="overload",priority="P2"} %d
# TYPE levee_fakemodel_requests_total counter
levee_fakemodel_requests_total{outcome="ok"} %d
`
	started := t0.Add(-250 * time.Millisecond)
	// The process's own start time, a boot time 0.6 s into its second lost.
	f := families(t, fmt.Sprintf(text, float64(started.UnixNano())/1e9-0.6, 50, 25))
	in := Input{Now: t0, Start: t0, Tick: tick, Window: load.Window{Duration: tick},
		Gateways: []Child{{Scrape: f, At: t0, Starts: 1, Started: started, Up: true}},
		Nodes:    []Child{{Scrape: f, At: t0, Starts: 1, Started: started, Up: true, Addr: "n0"}}}
	out, _ := Next(NewState(1, 1), in)
	if got := out.Sample.ShedRPSByReason["overload"]; math.Abs(got-200) > 1e-6 {
		t.Errorf("first shed rate %v/s, want 200 (50 in the 0.25 s since the start)", got)
	}
	if math.Abs(out.Completions-100) > 1e-6 {
		t.Errorf("first completions %v/s, want 100 (25 in 0.25 s)", out.Completions)
	}
}

// The Sample carries the supervisor's RSS both ways: the gateways' sum and
// the largest gateway's, which a per-gateway memory limit applies to.
func TestNextCarriesTheLargestGatewayRSS(t *testing.T) {
	t0 := time.Unix(100, 0)
	out, _ := Next(NewState(0, 0), Input{Now: t0, Start: t0, Tick: time.Second, RSSBytes: 450 << 20, RSSMaxBytes: 150 << 20})
	if s := out.Sample; s.RSSBytes != 450<<20 || s.RSSMaxBytes != 150<<20 {
		t.Errorf("RSS sum %v, largest %v; want 450 MB and 150 MB", s.RSSBytes, s.RSSMaxBytes)
	}
}

// TestCapacityFromConfigurationIsMarked: a node on which fewer than 50
// requests finished in its service window has its capacity from its
// configured mean service time; the Sample says how much of the capacity
// line is such an estimate (capacity_configured_rps), and nothing once the
// node's service time is measured.
func TestCapacityFromConfigurationIsMarked(t *testing.T) {
	t0 := time.Unix(100, 0)
	const text = nodeText + `# TYPE levee_fakemodel_service_seconds histogram
levee_fakemodel_service_seconds_bucket{le="+Inf"} %[2]d
levee_fakemodel_service_seconds_sum %[3]v
levee_fakemodel_service_seconds_count %[2]d
`
	in := func(at time.Time, done int, svcSum float64) Input {
		return Input{
			Now: at, Start: t0, Tick: time.Second, Window: load.Window{Duration: time.Second},
			Nodes: []Child{
				{Scrape: families(t, fmt.Sprintf(text, done, done, svcSum)), At: at, Starts: 1, Up: true, Addr: "n0"},
			},
		}
	}
	st := NewState(0, 1)
	out, st := Next(st, in(t0, 0, 0))
	// Nothing finished yet: 4 slots / 0.2 s configured.
	if s := out.Sample; s.CapacityRPS != 20 || s.CapacityConfiguredRPS != 20 {
		t.Errorf("no request finished: capacity %v, configured part %v; want 20, all of it", s.CapacityRPS, s.CapacityConfiguredRPS)
	}
	out, st = Next(st, in(t0.Add(time.Second), 49, 49*0.4))
	if s := out.Sample; s.CapacityRPS != 20 || s.CapacityConfiguredRPS != 20 {
		t.Errorf("49 finished: capacity %v, configured part %v; want 20, all of it", s.CapacityRPS, s.CapacityConfiguredRPS)
	}
	// 60 finished at 0.4 s each: measured, 4 / 0.4.
	out, _ = Next(st, in(t0.Add(2*time.Second), 60, 60*0.4))
	if s := out.Sample; s.CapacityRPS != 10 || s.CapacityConfiguredRPS != 0 {
		t.Errorf("60 finished: capacity %v, configured part %v; want 10 measured, 0", s.CapacityRPS, s.CapacityConfiguredRPS)
	}
}

// The sample's heap_bytes sums the gateways' live heaps; heap_max_bytes is
// the largest gateway's, what one gateway's guard reads.
func TestNextCarriesTheLargestGatewayHeap(t *testing.T) {
	t0 := time.Unix(100, 0)
	gw := func(heap int) Child {
		return Child{Scrape: families(t, fmt.Sprintf("# TYPE levee_heap_bytes gauge\nlevee_heap_bytes %d\n", heap)), At: t0, Starts: 1, Up: true}
	}
	out, _ := Next(NewState(3, 0), Input{Now: t0, Start: t0, Tick: time.Second, Gateways: []Child{gw(30 << 20), gw(50 << 20), gw(40 << 20)}})
	if s := out.Sample; s.HeapBytes != 120<<20 || s.HeapMaxBytes != 50<<20 {
		t.Errorf("heap sum %v, largest %v; want 120 MB and 50 MB", s.HeapBytes, s.HeapMaxBytes)
	}
}

// TestRatesNotOverAFewMilliseconds: a scrape slower than a tick is
// followed at once by the next (the ticker keeps one tick pending); the
// gateway admitted nothing in the 10 ms between them, and the admitted
// rate read 0 for that tick (a one-tick dip to 0 on the HTML report's
// admitted line) and double on the next. A scrape under half a tick
// after the last one used leaves the rates as they were; the next one's
// delta holds everything since, and no request is lost from the total.
func TestRatesNotOverAFewMilliseconds(t *testing.T) {
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	const text = `# TYPE levee_admitted_total counter
levee_admitted_total{class="ai",priority="P1"} %d
`
	in := func(now, at time.Time, admitted int) Input {
		return Input{Now: now, Start: t0, Tick: tick,
			Gateways: []Child{{Scrape: families(t, fmt.Sprintf(text, admitted)), At: at, Starts: 1, Up: true}}}
	}
	st := NewState(1, 0)
	_, st = Next(st, in(t0, t0, 1000))
	for i, tc := range []struct {
		now, at  time.Duration
		admitted int
		rps      float64
		total    float64
	}{
		{250 * time.Millisecond, 260 * time.Millisecond, 1260, 1000, 1260}, // a slow scrape
		{500 * time.Millisecond, 270 * time.Millisecond, 1260, 1000, 1260}, // the next at once, 10 ms on
		{750 * time.Millisecond, 750 * time.Millisecond, 1750, 1000, 1750}, // 490 over 0.49 s
	} {
		var out Output
		out, st = Next(st, in(t0.Add(tc.now), t0.Add(tc.at), tc.admitted))
		if math.Abs(out.Sample.AdmittedRPS-tc.rps) > 1e-6 || out.Sample.AdmittedTotal != tc.total {
			t.Errorf("tick %d: admitted %v/s, total %v; want %v/s and %v", i+1, out.Sample.AdmittedRPS, out.Sample.AdmittedTotal, tc.rps, tc.total)
		}
	}
}
