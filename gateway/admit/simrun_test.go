package admit

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"
)

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	if len(s) == 0 {
		return 0
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

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
	c := simCell{Mean: envF("MEAN", 0.2), Sigma: envF("SIGMA", 0.5), Nodes: 3, Slots: int(envF("SLOTS", 16)),
		Offered: envF("OFFERED", 3), Initial: envF("INIT", 1), Gateways: int(envF("GW", 1)), Change: os.Getenv("CHANGE"), ChangeAt: envF("CHANGEAT", 0),
		Reject: os.Getenv("REJECT") != "", Stream: os.Getenv("STREAM") != "", RTTOnly: os.Getenv("RTTONLY") != "",
		Seed: uint64(envF("SEED", 1)), Algo: os.Getenv("ALGO")}
	if c.Algo == "" {
		c.Algo = AlgoGradient
	}
	if os.Getenv("DEBUGW") != "" {
		debugWindow = func(a *adaptive, s *windowStats, before float64) {
			fmt.Printf("%6.1f win cap=%.1f cv=%.2f n=%d infl=%.1f stat=%.4f se=%.4f base=%.4f bsd=%.4f x=%.1f Q=%.2f qse=%.2f tgt=%.2f rts=%d used=%v est %.1f -> %.1f | f=%.2f fsw=%.2f\n",
				float64(a.now().UnixNano())/1e9/c.Mean, a.capEst, math.Sqrt(a.capVar), s.n, s.inflight, s.stat, s.se, a.base, math.Sqrt(a.baseVar), s.x, s.queue, s.queueSE, s.target, s.rts, s.used, before, a.est, s.stat/a.base, s.sw/a.baseSW)
		}
		debugUp = func(a *adaptive, s, l *windowStats) {
			fmt.Printf("%6.1f UP n=%d infl=%.1f stat=%.4f x=%.1f Q=%.2f qse=%.2f | last infl=%.1f Q=%.2f qse=%.2f\n", float64(a.now().UnixNano())/1e9/c.Mean, s.n, s.inflight, s.stat, s.x, s.queue, s.queueSE, l.inflight, l.queue, l.queueSE)
		}
		debugBase = func(a *adaptive, v, variance float64) {
			fmt.Printf("SETBASE %.4f sd %.4f (was %.4f)\n", v, math.Sqrt(variance), a.base)
		}
		debugProbe = func(a *adaptive, n int, stat, se float64) {
			fmt.Printf("PROBE n=%d stat=%.4f se=%.4f base=%.4f\n", n, stat, se, a.base)
		}
		debugProbeStart = func(a *adaptive, lim int, up bool) {
			fmt.Printf("PROBESTART lim=%d up=%v urgent=%v est=%.1f\n", lim, up, a.probe.urgent, a.est)
		}
		debugStall = func(a *adaptive, gap float64) { fmt.Printf("STALL gap=%.3f x=%.1f\n", gap, a.x) }
		defer func() {
			debugWindow, debugBase, debugProbe, debugUp, debugProbeStart, debugStall = nil, nil, nil, nil, nil, nil
		}()
	}
	r, err := runSim(c)
	if err != nil {
		t.Fatal(err)
	}
	st := c
	st.Algo = AlgoStatic
	rs, _ := runSim(st)
	fmt.Println(c)
	for i, p := range r.Phases {
		fmt.Printf("phase %d truth %d settle %.1f fill %.3f cv %.3f meanLim %.1f\n", i, p.Truth, p.Settle, p.Fill, p.CV, p.MeanLim)
	}
	fmt.Printf("P0 %.4f (demand %.2f) p99ratio %.2f goodput %d static %d ratio %.3f outcomes %v\n", r.P0(), r.P0Demand, r.P99Ratio, r.Goodput, rs.Goodput, float64(r.Goodput)/float64(rs.Goodput), r.Outcomes)
	if os.Getenv("TRACE") != "" {
		step := int(envF("TRACE", 10))
		for i := 0; i < len(r.Trace); i += step {
			fmt.Printf("%.0f ", r.Trace[i])
		}
		fmt.Println()
	}
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
