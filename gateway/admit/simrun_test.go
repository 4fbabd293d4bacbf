package admit

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

var debugTick func(s *sim)

func envF(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

func TestSimOne(t *testing.T) {
	if os.Getenv("SIMONE") == "" {
		t.Skip()
	}
	c := simCell{Mean: envF("MEAN", 0.2), Sigma: envF("SIGMA", 0.5), Nodes: int(envF("NODES", 3)), Slots: int(envF("SLOTS", 16)),
		Offered: envF("OFFERED", 3), Initial: envF("INIT", 1), Gateways: int(envF("GW", 1)), Change: os.Getenv("CHANGE"), ChangeAt: envF("CHANGEAT", 0),
		Reject: os.Getenv("REJECT") != "", Stream: os.Getenv("STREAM") != "", RTTOnly: os.Getenv("RTTONLY") != "", Mixed: os.Getenv("MIXED") != "", Guard: os.Getenv("GUARD") != "",
		Seed: uint64(envF("SEED", 1)), Algo: os.Getenv("ALGO")}
	if c.Algo == "" {
		c.Algo = AlgoGradient
	}
	if m := envF("MIXP0", 0); m > 0 {
		c.Mix = [NumPriorities]float64{m, 0.3, 0.7 - m}
	}
	defer simSwitchesFromEnv()()
	keepOverride = envF("KEEP", 0)
	defer func() { keepOverride = 0 }()
	var cur *sim
	debugSimCreated = func(s *sim) { cur = s }
	defer func() { debugSimCreated = nil }()
	if os.Getenv("DEBUGQ") != "" {
		debugWindow = func(a *adaptive, s *windowStats, before float64) {
			if cur == nil || cur.cell.Algo == AlgoStatic {
				return
			}
			q, busy := 0, 0
			for _, n := range cur.nodes {
				q += len(n.queue)
				busy += n.busy
			}
			fmt.Printf("QTRUE %.2f infl=%.1f Q=%.2f qse=%.2f trueq=%d busy=%d cap=%.1f\n", cur.now, s.inflight, s.queue, s.queueSE, q, busy, a.capEst)
		}
	} else if os.Getenv("DEBUGW") != "" {
		debugWindow = func(a *adaptive, s *windowStats, before float64) {
			fmt.Printf("%s win ceil=%.1f safe=%d cap=%.1f cv=%.2f n=%d infl=%.1f stat=%.4f se=%.4f base=%.4f bsd=%.4f x=%.1f Q=%.2f qse=%.2f tgt=%.2f cohorts=%d used=%v est %.1f -> %.1f\n",
				dbgID(a), a.ceil, a.Safe(), a.capEst, math.Sqrt(a.capVar), s.n, s.inflight, s.stat, s.se, a.base, math.Sqrt(a.baseVar), s.x, s.queue, s.queueSE, s.target, s.cohorts, s.used, before, a.est)
		}
		debugSimP0 = func(s *sim, id int32, outcome string) {
			if s.cell.Algo == AlgoStatic {
				return
			}
			r := &s.reqs[id]
			g := s.gws[r.gw].bh.Limiter()
			safe := 0
			if sl, ok := g.(SafeLimiter); ok {
				safe = sl.Safe()
			}
			fmt.Printf("t=%7.3f g%d P0FAIL %s node=%d tried=%b lim=%d safe=%d busy=%v\n", s.now, r.gw, outcome, r.node, r.tried, g.Limit(), safe, s.busyNodes())
		}
		debugRefused = func(a *adaptive, inflight int, ceil float64) {
			fmt.Printf("%s REFUSED infl=%d ceil %.1f -> %.1f est=%.1f lim=%d\n", dbgID(a), inflight, ceil, a.ceil, a.est, a.Limit())
		}
		debugUp = func(a *adaptive, s, l *windowStats) {
			waited, nw, nq := 0.0, 0, 0
			var works []float64
			for t := probeFrom + probeRamp; t < probeFrom+probeWant; t++ {
				if w, ok := debugWaits[t]; ok {
					waited += w[0]
					works = append(works, w[1])
					nw++
					if w[0] > 1e-9 {
						nq++
					}
				}
			}
			fmt.Printf("  up tickets %d..%d: %d started, %d waited, mean wait %.4f, works trimmed %.4f pending %d\n", probeFrom+probeRamp, probeFrom+probeWant, nw, nq, waited/float64(max(nw, 1)), trimmedOf(works), a.scratch[0].pending)
			fmt.Printf("%s UP n=%d infl=%.1f stat=%.4f x=%.1f base=%.4f Q=%.2f qse=%.2f | last infl=%.1f stat=%.4f x=%.1f Q=%.2f qse=%.2f\n", dbgID(a), s.n, s.inflight, s.stat, s.x, a.base, s.queue, s.queueSE, l.inflight, l.stat, l.x, l.queue, l.queueSE)
		}
		debugBase = func(a *adaptive, v, variance float64) {
			fmt.Printf("SETBASE %.4f sd %.4f (was %.4f)\n", v, math.Sqrt(variance), a.base)
		}
		debugWaits = map[uint64][2]float64{}
		debugProbe = func(a *adaptive, n int, stat, se float64) {
			waited, nw := 0.0, 0
			var works []float64
			for t := probeFrom; t < probeFrom+probeWant; t++ {
				if w, ok := debugWaits[t]; ok {
					waited += w[0]
					works = append(works, w[1])
					nw++
				}
			}
			fmt.Printf("  probe tickets %d..%d: %d back, mean wait %.4f, works trimmed %.4f\n", probeFrom, probeFrom+probeWant, nw, waited/float64(max(nw, 1)), trimmedOf(works))
			fmt.Printf("%s PROBE lim=%d n=%d stat=%.4f se=%.4f base=%.4f\n", dbgID(a), a.probe.limit, n, stat, se, a.base)
		}
		debugProbeStart = func(a *adaptive, lim int, up bool) {
			probeFrom, probeWant, probeRamp = a.probe.from, uint64(a.probe.want), uint64(a.probe.ramp)
			fmt.Printf("%s PROBESTART lim=%d up=%v urgent=%v est=%.1f every=%.0f since=%.0f sinceUp=%.0f\n", dbgID(a), lim, up, a.probe.urgent, a.est, a.every, a.since, a.sinceUp)
		}
		debugStall = func(a *adaptive, gap float64) { fmt.Printf("STALL gap=%.3f x=%.1f\n", gap, a.x) }
		debugJump = func(a *adaptive, growth, done, want float64, cut bool) {
			fmt.Printf("%s JUMP growth=%.2f done=%.0f want=%.1f cut=%v n0=%.1f est=%.1f x0=%.1f span=%.3f\n", dbgID(a), growth, done, want, cut, a.jump.n0, a.est, a.jump.x0, a.jump.span)
		}
		defer func() {
			debugWindow, debugBase, debugProbe, debugUp, debugProbeStart, debugStall, debugRefused, debugSimP0, debugJump = nil, nil, nil, nil, nil, nil, nil, nil, nil
			debugWaits = nil
		}()
	}
	if every := envF("DUMPA", 0); every > 0 {
		next := 0.0
		debugTick = func(s *sim) {
			if s.cell.Algo == AlgoStatic || s.now < next {
				return
			}
			next = s.now + every*s.mean
			for i := range s.gws {
				a := adaptiveOf(s.gws[i].bh.Limiter())
				if a == nil {
					continue
				}
				fmt.Printf("DUMP t=%.0f gw%d lim=%d est=%.2f ceil=%.1f age=%d cap=%.1f tickets=%d ceilAt=%d ring=%d winn=%d wincohorts=%d infl=%d\n", s.now/s.mean, i, a.Limit(), a.est, a.ceil, a.ceilAge, a.capEst, a.tickets.Load(), a.ceilAt, a.ring.count, a.win.n, a.win.cohorts, s.gws[i].bh.Stats().Inflight)
			}
		}
		defer func() { debugTick = nil }()
	}
	simTraceMean = c.Mean
	r, rs, adSim, stSim, err := runPair(c)
	if err != nil {
		t.Fatal(err)
	}
	if bin := envF("BINS", 0); bin > 0 {
		// ok completions by bins of BINS mean service times: adaptive / static.
		count := func(xs []float64) map[int]int {
			m := map[int]int{}
			for _, at := range xs {
				m[int(at/c.Mean/bin)]++
			}
			return m
		}
		a, b := count(adSim.okAt), count(stSim.okAt)
		for k := 0; k <= int(stSim.now/c.Mean/bin); k++ {
			fmt.Printf("bin %5.0f ok %6d static %6d short %6d\n", float64(k)*bin, a[k], b[k], b[k]-a[k])
		}
	}
	fmt.Println(c)
	for i, p := range r.Phases {
		fmt.Printf("phase %d truth %d settle %.1f fill %.3f cv %.3f meanLim %.1f | static fill %.3f\n", i, p.Truth, p.Settle, p.Fill, p.CV, p.MeanLim, rs.Phases[i].Fill)
	}
	fmt.Printf("static outcomes %v\n", rs.Outcomes)
	fmt.Printf("P0 %.4f (demand %.2f) p99ratio %.2f goodput %d static %d ratio %.3f outcomes %v\n", r.P0(), r.P0Demand, r.P99Ratio, r.Goodput, rs.Goodput, float64(r.Goodput)/float64(rs.Goodput), r.Outcomes)
	if os.Getenv("TRACE") != "" {
		step := int(envF("TRACE", 10))
		for i := 0; i < len(r.Trace); i += step {
			fmt.Printf("%.0f ", r.Trace[i])
		}
		fmt.Println()
	}
}

// runPair plays cell c with its limiter and with the static semaphore
// on the same draws, and returns both results and both sims.
func runPair(c simCell) (res, static *simResult, ad, st *sim, err error) {
	prev := debugSimCreated
	var cur *sim
	debugSimCreated = func(s *sim) {
		cur = s
		if prev != nil {
			prev(s)
		}
	}
	defer func() { debugSimCreated = prev }()
	if res, err = runSim(c); err != nil {
		return nil, nil, nil, nil, err
	}
	ad = cur
	sc := c
	sc.Algo = AlgoStatic
	if static, err = runSim(sc); err != nil {
		return nil, nil, nil, nil, err
	}
	return res, static, ad, cur, nil
}

// The guard of the simulation: the gateway's defaults (gateway.DefaultConfig:
// evaluated every 100 ms, a 2 s hold, in-flight at the nodes over the
// configured limit 1.25 / 2 / 6) with the lessons' queue fill watermark
// (yellow at half the bulkhead queue). The machine's signals (lag, GC,
// heap) are zero: the simulation has no machine; what it judges is
// whether the traffic's own signals shed more than the excess.
const (
	simGuardEvery = 0.1 // seconds
	simGuardHold  = 2 * time.Second
)

func newSimGuard(g *simGateway, configured float64) *Guard {
	level := func(inflightRatio, fill float64) Signals {
		return Signals{Inflight: int64(math.Ceil(inflightRatio * configured)), QueueFill: fill}
	}
	th := Thresholds{Yellow: level(1.25, 0.5), Red: level(2, 0), Black: level(6, 0)}
	return NewGuard(th, WithHold(simGuardHold), WithEvalInterval(dur(simGuardEvery)),
		WithSource(func() Signals { return Signals{} }),
		WithExternal(func() Signals {
			var infl int64
			for _, l := range g.loads {
				infl += l
			}
			if live := g.bh.Limiter().Limit(); live > 0 {
				infl = int64(math.Round(float64(infl) * configured / float64(live)))
			}
			st := g.bh.Stats()
			fill := 0.0
			if st.QueueSize > 0 {
				fill = float64(st.Queued()) / float64(st.QueueSize)
			}
			return Signals{Inflight: infl, QueueFill: fill}
		}))
}

// simT is the virtual time of a's clock, in mean service times of the traced cell.
func simT(a *adaptive) float64 { return float64(a.now().UnixNano()) / 1e9 / simTraceMean }

var simTraceMean = 1.0

func trimmedOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	k := (len(s) + 1) / 2
	sum := 0.0
	for _, v := range s[:k] {
		sum += v
	}
	return sum / float64(k)
}

var probeFrom, probeWant, probeRamp uint64

var dbgIDs = map[*adaptive]int{}

// dbgID names a limiter in traces: its virtual time (mean service times) and gateway.
func dbgID(a *adaptive) string {
	id, ok := dbgIDs[a]
	if !ok {
		id = len(dbgIDs)
		dbgIDs[a] = id
	}
	return fmt.Sprintf("%.2f g%d", simT(a), id)
}

func (s *sim) busyNodes() []int {
	var b []int
	for _, n := range s.nodes {
		b = append(b, n.busy)
	}
	return b
}
