package runfiles

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/experiment"
)

// The global-limit check compares what all gateways let through with the
// configured limit over spans of the limit, apart inside and outside
// faults (a fault's span runs one limit span past its revert), and leaves
// out spans where the tenant offered too little for the limit to decide.
func TestGlobalLimitCheck(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	a := NewAggregator(start, 100)
	const tick = 0.25
	var offered, passed uint64
	// 20 s: P2 offers 300/s; the limit is 100/s. Steady: 104/s pass;
	// 8–12 s (a fault, and one span after it): 130/s. 0–2 s offers only
	// 100/s (the ramp: not judged).
	for i := 1; i <= 80; i++ {
		x := float64(i) * tick
		offer, pass := 300.0, 104.0
		switch {
		case x <= 2:
			offer, pass = 100, 100
		case x > 8 && x <= 13:
			pass = 130
		}
		offered += uint64(offer * tick)
		passed += uint64(pass * tick)
		a.Add(Sample{Time: start.Add(time.Duration(x * float64(time.Second))),
			ByPriority: map[string]PrioritySample{"P2": {OfferedTotal: offered, PassedRateLimitTotal: passed}}}, tick, 0, false, 0)
		if x == 8 {
			a.FaultApplied("redis_outage", start.Add(8*time.Second))
		}
		if x == 12 {
			a.FaultReverted("redis_outage", start.Add(12*time.Second))
		}
	}
	rl := a.globalLimits(map[string]experiment.GlobalLimit{"P2": {RPS: 100, Span: experiment.Duration(time.Second), Rule: "sliding window 100 / 1s"}})
	c := rl.ByPriority["P2"]
	if math.Abs(c.Steady.Error-0.04) > 0.005 || math.Abs(c.Faults.Error-0.30) > 0.05 {
		t.Errorf("steady %+v faults %+v, want errors +4 %% and about +30 %%", c.Steady, c.Faults)
	}
	// Judged: 2–20 s (before, the first span sets the base and the ramp
	// offers too little), the fault's spans apart: 8–13 s, from its start
	// to one span after its end.
	if c.Steady.Seconds != 13 || c.Faults.Seconds != 5 {
		t.Errorf("seconds judged: steady %v, faults %v", c.Steady.Seconds, c.Faults.Seconds)
	}
	s := Summary{RateLimit: rl}
	if v, note := s.Metric("global_limit_error"); math.Abs(v-0.04) > 0.005 || note != "" {
		t.Errorf("global_limit_error %v %q", v, note)
	}
	// No priority over its limit: nothing to judge, said so.
	b := NewAggregator(start, 100)
	b.Add(Sample{Time: start.Add(time.Second), ByPriority: map[string]PrioritySample{"P2": {OfferedTotal: 50, PassedRateLimitTotal: 50}}}, 1, 0, false, 0)
	b.Add(Sample{Time: start.Add(2 * time.Second), ByPriority: map[string]PrioritySample{"P2": {OfferedTotal: 100, PassedRateLimitTotal: 100}}}, 1, 0, false, 0)
	s = Summary{RateLimit: b.globalLimits(map[string]experiment.GlobalLimit{"P2": {RPS: 100, Span: experiment.Duration(time.Second)}})}
	if v, note := s.Metric("global_limit_error"); !math.IsNaN(v) || note == "" {
		t.Errorf("under the limit: %v %q, want NaN and a note", v, note)
	}
}

// The text report shows the Redis, its failovers and the global limit
// measured against the configured one; without Redis only "redis off".
func TestReportShowsRedisAndGlobalLimit(t *testing.T) {
	with := &Run{Summary: &Summary{Name: "06", Redis: RedisSummary{Kind: "cluster", Addr: "127.0.0.1:7000", Fallbacks: 1656,
		Failovers: []RedisFailover{{Killed: "127.0.0.1:7000", By: "127.0.0.1:7003", AfterS: 2.5}}},
		RateLimit: &RateLimitSummary{ByPriority: map[string]GlobalLimitCheck{
			"P1": {LimitRPS: 100, Steady: LimitSpan{Seconds: 5, AdmittedRPS: 101, Error: 0.01}},
			"P2": {LimitRPS: 100, Steady: LimitSpan{Seconds: 9, AdmittedRPS: 97.4, Error: -0.026}, Faults: LimitSpan{Seconds: 4, AdmittedRPS: 94.7, Error: -0.053}},
		}}}}
	without := &Run{Summary: &Summary{Name: "01"}}
	var b strings.Builder
	if err := WriteReport(&b, []*Run{with}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster 127.0.0.1:7000…", "1,656", "2.5s", "P2 97.4 / 100 /s", "-2.6% / -5.3%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteReport(&b, []*Run{without}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "off") || strings.Contains(b.String(), "global limit") || strings.Contains(b.String(), "failover") {
		t.Errorf("a run without Redis:\n%s", b.String())
	}
}

// With the generator's reference (one exact limiter on the same requests),
// the error is measured against what it let through, not against the
// limit: an exact sliding window admits less than its limit under random
// arrivals, and that shortfall is not the gateways' error. The report
// shows both.
func TestGlobalLimitAgainstTheReference(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name      string
		reference float64 // per second; 0: a run without a reference
		wantErr   float64
	}{
		{"against one exact limiter", 97, 99.0/97 - 1},
		{"without a reference, against the limit", 0, -0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAggregator(start, 100)
			var offered, passed, ref uint64
			for i := 1; i <= 10; i++ { // 10 s at 150/s offered, 99/s passed, in 1 s samples
				offered, passed, ref = offered+150, passed+99, ref+uint64(tc.reference)
				a.Add(Sample{Time: start.Add(time.Duration(i) * time.Second),
					ByPriority: map[string]PrioritySample{"P1": {OfferedTotal: offered, PassedRateLimitTotal: passed, ReferencePassedTotal: ref}}}, 1, 0, false, 0)
			}
			rl := a.globalLimits(map[string]experiment.GlobalLimit{"P1": {RPS: 100, Span: experiment.Duration(time.Second), Rule: "sliding window 100 / 1s"}})
			c := rl.ByPriority["P1"]
			if c.Steady.Seconds != 9 || math.Abs(c.Steady.AdmittedRPS-99) > 1e-9 {
				t.Fatalf("steady %+v, want 9 s at 99/s", c.Steady)
			}
			if math.Abs(c.Steady.Error-tc.wantErr) > 1e-5 || c.Steady.ReferenceRPS != tc.reference {
				t.Errorf("steady %+v, want error %.5f against %v/s", c.Steady, tc.wantErr, tc.reference)
			}
			var b strings.Builder
			if err := WriteReport(&b, []*Run{{Summary: &Summary{Name: "06", RateLimit: rl}}}); err != nil {
				t.Fatal(err)
			}
			want := "P1 99.0 / 100 /s"
			if tc.reference > 0 {
				want += " (one exact limiter: 97.0)"
			}
			if !strings.Contains(b.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, b.String())
			}
		})
	}
}

// Spans are the ticks that cover the limit's span to within half a tick:
// four ticks of 249.8 ms make a span of a 1 s limit (a fifth, making
// 1.25 s, could hold two of a sliding window's bursts). With a reference,
// a tenant offering 1.2× its limit is judged (the reference has the same
// offer); without one only spans offered 1.5× the limit are.
func TestGlobalLimitSpans(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	const tick = 0.2498
	for _, tc := range []struct {
		name        string
		offerPerSec float64
		reference   bool
		wantSeconds float64
	}{
		{"four short ticks make a span", 200, true, 9 * 4 * tick},
		{"the same without a reference", 200, false, 9 * 4 * tick},
		{"1.2× the limit, against the reference", 120, true, 9 * 4 * tick},
		{"1.2× the limit, against the limit: not judged", 120, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAggregator(start, 100)
			var offered, passed, ref uint64
			for i := 1; i <= 40; i++ {
				offered += uint64(tc.offerPerSec / 4)
				passed += 25
				if tc.reference {
					ref += 25
				}
				a.Add(Sample{Time: start.Add(time.Duration(float64(i) * tick * float64(time.Second))),
					ByPriority: map[string]PrioritySample{"P1": {OfferedTotal: offered, PassedRateLimitTotal: passed, ReferencePassedTotal: ref}}}, tick, 0, false, 0)
			}
			c := a.globalLimits(map[string]experiment.GlobalLimit{"P1": {RPS: 100, Span: experiment.Duration(time.Second)}}).ByPriority["P1"]
			if math.Abs(c.Steady.Seconds-tc.wantSeconds) > 1e-3 {
				t.Errorf("judged %v s, want %v s", c.Steady.Seconds, tc.wantSeconds)
			}
		})
	}
}
