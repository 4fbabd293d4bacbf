package htmlreport

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/hdrv2"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// synth describes a synthetic run: a 10× overload of three nodes, with
// faults, narration and an OOM kill at fixed shares of its length. The
// numbers are made up but shaped like the lab's (rates, per-tick
// histograms, stale gateway ticks after the kill); seeded, so the same
// synth writes the same files.
type synth struct {
	name      string
	samples   int           // ticks of 250 ms
	protected bool          // sheds instead of collapsing
	seed      uint64        // arrivals and latencies
	start     time.Time     // summary.Started
	tick      time.Duration // 250 ms unless set
	gateways  int           // the experiment's gateway count; 1 unless set
}

// write creates the run folder under dir and returns its path.
func (sy synth) write(t testing.TB, dir string) string {
	t.Helper()
	if sy.tick == 0 {
		sy.tick = 250 * time.Millisecond
	}
	if sy.start.IsZero() {
		sy.start = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	}
	rd := filepath.Join(dir, sy.name)
	if err := os.MkdirAll(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(sy.seed, 7))
	tick := sy.tick.Seconds()
	T := float64(sy.samples) * tick
	at := func(share float64) float64 { return math.Round(T*share/tick) * tick }
	const capacity = 215.0
	killFrom, killTo := at(0.30), at(0.45)
	latFrom, latTo := at(0.60), at(0.70)
	oomAt, oomBack := at(0.80), at(0.80)+3
	if sy.protected {
		oomAt, oomBack = -1, -1
	}

	// events.jsonl
	var events []runfiles.Event
	ev := func(x float64, kind, detail string, fields map[string]any) {
		events = append(events, runfiles.Event{Time: sy.start.Add(seconds(x)), Elapsed: x, Kind: kind, Detail: detail, Fields: fields})
	}
	ev(0, runfiles.EventRunStart, sy.name, nil)
	for i, share := range []float64{0, 0.25, 0.5, 0.75} {
		kind := []string{"predict", "watch", "watch", "explain"}[i]
		ev(at(share)+0.001, runfiles.EventNarration, fmt.Sprintf("Step %d of %s: what happens next?", i+1, sy.name), map[string]any{"step": i + 1, "kind": kind})
	}
	// The room's answer at the predict step (skipped in the protected run)
	// and the measurement the explain step wrote.
	pred, measured := 60.0, 34.2
	if sy.protected {
		measured = 99.9
	}
	ev(at(0)+0.5, runfiles.EventPrediction, "P0 success %?", runfiles.PredictionFields(1, "p0_success_rate", "P0 success %?", pred, sy.protected))
	mp := runfiles.Prediction{Step: 1, ExplainStep: 4, Metric: "p0_success_rate", Unit: "%", Question: "P0 success %?", Measured: &measured, FromS: 0, ToS: at(0.75)}
	if !sy.protected {
		mp.Predicted = &pred
	}
	ev(at(0.75)+0.002, runfiles.EventPredictionMeasured, "P0 success", runfiles.MeasuredFields(mp))
	ev(killFrom, runfiles.EventFaultApply, "node_kill #2", map[string]any{"fault": "node_kill", "detail": "#2"})
	ev(killTo, runfiles.EventFaultRevert, "node_kill #2", map[string]any{"fault": "node_kill", "detail": "#2"})
	ev(latFrom, runfiles.EventFaultApply, "model_latency ×3", map[string]any{"fault": "model_latency", "detail": "×3"})
	ev(latTo, runfiles.EventFaultRevert, "model_latency ×3", map[string]any{"fault": "model_latency", "detail": ""})
	if oomAt > 0 {
		ev(oomAt, runfiles.EventOOMKill, "gateway-0", map[string]any{"pid": 42})
		ev(oomBack, runfiles.EventChildStart, "gateway-0", map[string]any{"pid": 43})
	}
	ev(T, runfiles.EventRunEnd, "done", nil)

	// samples.jsonl
	f, err := os.Create(filepath.Join(rd, runfiles.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	newH := func() *hdrhistogram.Histogram { return hdrhistogram.New(1, 600e6, 3) }
	var henc hdrv2.Encoder
	encode := func(h *hdrhistogram.Histogram) string {
		if h.TotalCount() == 0 {
			return ""
		}
		p := hdrhistogram.NewPacked(1, 600e6, 3)
		p.MergeFrom(h)
		s, err := henc.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	shares := map[string]float64{"P0": 0.05, "P1": 0.25, "P2": 0.70}
	outTotal := map[string]uint64{}
	prio := map[string]*runfiles.PrioritySample{"P0": {}, "P1": {}, "P2": {}}
	var offered uint64
	oom := 0
	admitted := newH()
	hists := map[string]*hdrhistogram.Histogram{"P0": newH(), "P1": newH(), "P2": newH()}
	for i := 1; i <= sy.samples; i++ {
		x := float64(i) * tick
		target := 100.0
		if x > 0.1*T {
			target = 2100
		}
		up := 3
		if x > killFrom && x <= killTo {
			up = 2
		}
		capNow := capacity * float64(up) / 3
		if x > latFrom && x <= latTo {
			capNow /= 3
		}
		stale := oomAt > 0 && x > oomAt && x <= oomBack
		if oomAt > 0 && x > oomAt {
			oom = 1
		}
		s := runfiles.Sample{
			Time: sy.start.Add(seconds(x)), Elapsed: x, TargetRPS: target, CapacityRPS: capacity * float64(up) / 3,
			OutcomeRPS: map[string]float64{}, OutcomeTotal: map[string]uint64{}, ByPriority: map[string]runfiles.PrioritySample{},
			ShedRPSByReason: map[string]float64{}, ShedRPSByPriority: map[string]float64{}, OOMKills: oom, GatewayStale: stale,
			Defenses: map[string]bool{"guard": sy.protected, "bulkhead": sy.protected},
		}
		admitted.Reset()
		for _, p := range load.Priorities {
			mean := target * shares[p] * tick
			n := uint64(math.Max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
			offered += n
			ps := prio[p]
			ps.OfferedTotal += n
			h := hists[p]
			h.Reset()
			served := math.Min(float64(n), capNow*tick*shares[p]*3)
			if sy.protected && p == "P0" {
				served = float64(n)
			}
			if !sy.protected {
				served = math.Min(float64(n), capNow*tick*0.15*shares[p])
			}
			for j := uint64(0); j < n; j++ {
				var lat float64 // µs
				outcome := wire.OutcomeOK.String()
				switch {
				case float64(j) < served:
					lat = 200e3 * math.Exp(rng.NormFloat64()*0.45)
					if !sy.protected {
						lat *= 6
					}
				case sy.protected:
					outcome = wire.OutcomeShedOverload.String()
					if p == "P1" {
						outcome = wire.OutcomeShedQueueFull.String()
					}
					lat = 800 * math.Exp(rng.NormFloat64()*0.5)
				default:
					outcome = wire.OutcomeTimeout.String()
					lat = 2e6 + rng.Float64()*5e4
				}
				if stale && !sy.protected {
					outcome = wire.OutcomeError.String()
				}
				_ = h.RecordValue(int64(math.Max(1, lat)))
				if outcome == wire.OutcomeOK.String() || outcome == wire.OutcomeTimeout.String() || outcome == wire.OutcomeError.String() {
					_ = admitted.RecordValue(int64(math.Max(1, lat)))
				}
				outTotal[outcome]++
				s.OutcomeRPS[outcome] += 1 / tick
				if outcome == wire.OutcomeOK.String() {
					ps.OKTotal++
				}
				ps.FinishedTotal++
				if outcome == wire.OutcomeShedOverload.String() || outcome == wire.OutcomeShedQueueFull.String() {
					s.ShedRPSByPriority[p] += 1 / tick
					s.ShedRPSByReason[outcome[len("shed_"):]] += 1 / tick
				}
			}
			ps.Hist = encode(h)
			ps.P99Ms = float64(h.ValueAtPercentile(99)) / 1000
			ps.P50Ms = float64(h.ValueAtPercentile(50)) / 1000
			s.ByPriority[p] = *ps
		}
		s.OfferedTotal = offered
		s.OfferedRPS = float64(offered) / x
		for _, o := range load.Outcomes {
			s.OutcomeTotal[o] = outTotal[o]
		}
		s.GoodputRPS = s.OutcomeRPS[wire.OutcomeOK.String()]
		s.AdmittedHist = encode(admitted)
		s.AdmittedP50Ms = float64(admitted.ValueAtPercentile(50)) / 1000
		s.AdmittedP99Ms = float64(admitted.ValueAtPercentile(99)) / 1000
		if !stale {
			s.Level = "green"
			s.LagProbeP99Ms = 2 + 3*rng.Float64()
			s.SchedLatencyP99Ms = 1 + rng.Float64()
			s.GCPauseP99Ms = 0.2 + 0.2*rng.Float64()
			s.HeapBytes = 8 << 20
			s.Goroutines = 300
			s.Inflight, s.QueueDepth, s.ConcurrencyLimit = 48, 20, 48
			if !sy.protected {
				grow := math.Min(x/T, 1)
				s.LagProbeP99Ms += 100 * grow
				s.HeapBytes = 8<<20 + grow*(200<<20)
				s.Goroutines = 300 + grow*6000
				s.Inflight, s.QueueDepth, s.ConcurrencyLimit = 48+grow*6000, 0, 0
			}
			s.RSSBytes = s.HeapBytes * 1.6
			// Retries while a node is down, a steady trickle of hedges.
			s.RetryRPS, s.HedgeRPS = 0, 1.5
			if up < 3 {
				s.RetryRPS = 12
			}
		}
		for n := range 3 {
			ns := runfiles.NodeSample{Index: n, Up: n != 1 || up == 3, Slots: 16, Busy: 16}
			if !stale {
				ns.Ejection = wire.EjectionInRotation
				if n == 1 && up < 3 {
					ns.Ejection = wire.EjectionEjected
				}
			}
			s.Nodes = append(s.Nodes, ns)
		}
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
	}

	// run.json, events.jsonl, summary.json
	// A whole experiment, as a run's run.json holds one: ReadRun refuses
	// one that does not pass an experiment file's checks.
	exp := &experiment.Experiment{Name: sy.name, Title: "Synthetic " + sy.name, Tick: experiment.Duration(sy.tick),
		Duration:   experiment.Duration(time.Duration(T * float64(time.Second))),
		Gateway:    experiment.GatewaySpec{Count: max(sy.gateways, 1), MemoryLimitMB: 256},
		Thresholds: map[string]string{"p0_success_rate": ">= 0.999", "lag_p99_ms": "<= 50", "oom_kills": "== 0", "max_heap_bytes": "<= 104857600"}}
	info := runfiles.RunInfo{Name: sy.name, Started: sy.start, Experiment: exp, Resolved: runfiles.Resolved{
		Tick: experiment.Duration(sy.tick),
		GatewayConfig: map[string]any{"guard": map[string]any{
			"lag_probe_p99_ms": map[string]any{"yellow": 100.0, "red": 800.0, "black": 0.0}}},
	}}
	sum := runfiles.Summary{Name: sy.name, Title: exp.Title, Started: sy.start, DurationS: T, Ended: "done",
		Offered: offered, Outcomes: map[string]uint64{}, ByPriority: map[string]runfiles.PrioritySummary{},
		ShedByReason: map[string]uint64{}, Thresholds: map[string]runfiles.ThresholdResult{}}
	var sumOut uint64
	for _, o := range load.Outcomes {
		sum.Outcomes[o] = outTotal[o]
		sumOut += outTotal[o]
	}
	sum.Unaccounted = int64(offered) - int64(sumOut)
	for _, p := range load.Priorities {
		ps := prio[p]
		sum.ByPriority[p] = runfiles.PrioritySummary{Offered: ps.OfferedTotal, OK: ps.OKTotal, SuccessRate: float64(ps.OKTotal) / float64(max(ps.OfferedTotal, 1)), P99Ms: 500}
	}
	sum.GoodputRPS = float64(outTotal[wire.OutcomeOK.String()]) / T
	sum.CapacityRPS = capacity
	sum.AdmittedP99Ms = 900
	sum.Gateway = runfiles.GatewaySummary{LagP99Ms: 5, MaxHeapBytes: 8 << 20, OOMKills: 0}
	if !sy.protected {
		sum.Gateway = runfiles.GatewaySummary{LagP99Ms: 105, MaxHeapBytes: 208 << 20, OOMKills: 1}
		sum.AdmittedP99Ms = 2050
	}
	sum.Pass = true
	for _, name := range sortedKeys(exp.Thresholds) {
		th, err := experiment.ParseThreshold(name, exp.Thresholds[name])
		if err != nil {
			t.Fatal(err)
		}
		v, _ := sum.Metric(name)
		sum.Thresholds[name] = runfiles.ThresholdResult{Expr: th.Expr, Value: v, Pass: th.Check(v)}
		sum.Pass = sum.Pass && th.Check(v)
	}
	writeJSON(t, filepath.Join(rd, runfiles.RunFile), info)
	writeJSON(t, filepath.Join(rd, runfiles.SummaryFile), sum)
	ef, err := os.Create(filepath.Join(rd, runfiles.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	eenc := json.NewEncoder(ef)
	for _, e := range events {
		if err := eenc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	return rd
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
