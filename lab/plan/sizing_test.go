package plan

import (
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// flagged builds inputs as if typed on the command line.
type flagged struct {
	nodes, slots, gateways, k, yellow, red, maxTok int
	mean, p50, p99, budget                         time.Duration
	target, prompt                                 float64
}

func (f flagged) inputs() Inputs {
	var in Inputs
	setI := func(dst *Known[int], v int) {
		if v != 0 {
			*dst = Of(v, FromFlag)
		}
	}
	setD := func(dst *Known[time.Duration], v time.Duration) {
		if v != 0 {
			*dst = Of(v, FromFlag)
		}
	}
	setI(&in.Nodes, f.nodes)
	setI(&in.SlotsPerNode, f.slots)
	setI(&in.Gateways, f.gateways)
	setI(&in.SubTasks, f.k)
	setI(&in.YellowSubTasks, f.yellow)
	setI(&in.RedSubTasks, f.red)
	setI(&in.MaxTokens, f.maxTok)
	setD(&in.Mean, f.mean)
	setD(&in.P50, f.p50)
	setD(&in.P99, f.p99)
	setD(&in.Budget, f.budget)
	if f.target != 0 {
		in.Target = Of(f.target, FromFlag)
	}
	if f.prompt != 0 {
		in.PromptTokens = Of(f.prompt, FromFlag)
	}
	return in
}

// TestComputeSeedExamples checks the arithmetic on the seed articles' own
// worked examples and on the lab's nodes.
func TestComputeSeedExamples(t *testing.T) {
	tests := []struct {
		name  string
		in    flagged
		check func(t *testing.T, s Sizing)
	}{
		{"seed 000: 50 slots / 1.2 s", flagged{slots: 50, mean: 1200 * time.Millisecond}, func(t *testing.T, s Sizing) {
			if s.Slots.C != 50 || !near(s.Safe.QPS, 50/1.2) {
				t.Errorf("C %d, QPS_safe %v; want 50, 41.67", s.Slots.C, s.Safe.QPS)
			}
			if s.Limit.Need == "" || !strings.Contains(s.Limit.Need, "p99") {
				t.Errorf("limit without p99: need %q", s.Limit.Need)
			}
		}},
		{"seed 001: 5000 req/s × 40 ms", flagged{target: 5000, mean: 40 * time.Millisecond, slots: 10}, func(t *testing.T, s Sizing) {
			if s.For.Slots != 200 || s.For.Nodes != 20 || !near(s.For.Share, 10.0/200) {
				t.Errorf("slots %d nodes %d share %v; want 200, 20, 0.05", s.For.Slots, s.For.Nodes, s.For.Share)
			}
		}},
		{"seed 002: 2000 req/s × 1.5 s / 10", flagged{target: 2000, p99: 1500 * time.Millisecond, gateways: 10}, func(t *testing.T, s Sizing) {
			if s.Limit.QPSIs != "target" || !near(s.Limit.Raw, 300) || s.Limit.Limit != 300 {
				t.Errorf("limit %v (%d) from %s; want 300 from the target", s.Limit.Raw, s.Limit.Limit, s.Limit.QPSIs)
			}
			if s.Safe.Need == "" {
				t.Error("QPS_safe computed without slots")
			}
		}},
		{"lab nodes: 3 × 16, lognormal 200/600 ms", flagged{nodes: 3, slots: 16, p50: 200 * time.Millisecond, p99: 600 * time.Millisecond, target: 2100, budget: 2 * time.Second, prompt: 250, maxTok: 64, k: 4, yellow: 2, red: 1}, func(t *testing.T, s Sizing) {
			// The lognormal's mean: 200 ms × exp(σ²/2), σ = ln 3 / z99.
			sigma := math.Log(3) / z99
			wantT := 0.2 * math.Exp(sigma*sigma/2)
			if s.Service.How != "lognormal" || !near(s.Service.T.Seconds(), wantT) {
				t.Errorf("T %v (%s); want %.6f s lognormal", s.Service.T, s.Service.How, wantT)
			}
			safe := 48 / wantT
			if !near(s.Safe.QPS, safe) || math.Abs(s.Safe.QPS-214.7) > 0.1 {
				t.Errorf("QPS_safe %v, want %v (≈ 214.7)", s.Safe.QPS, safe)
			}
			if s.For.Slots != int(math.Ceil(2100*wantT)) || s.For.Nodes != 30 {
				t.Errorf("slots for 2100 req/s: %d (%d nodes)", s.For.Slots, s.For.Nodes)
			}
			if !near(s.Limit.Raw, safe*0.6) || s.Limit.Limit != 129 || !near(s.Limit.Little, 48) || !near(s.Limit.PerSlots, 48) {
				t.Errorf("limit %v → %d, Little %v, per slots %v", s.Limit.Raw, s.Limit.Limit, s.Limit.Little, s.Limit.PerSlots)
			}
			if !near(s.Limit.AtTarget, 2100*0.6) {
				t.Errorf("limit at the target %v, want 1260", s.Limit.AtTarget)
			}
			if s.Queue.Timeout != 1400*time.Millisecond || !s.Queue.ByP99 || s.Queue.Size != int(math.Floor(safe*1.4)) {
				t.Errorf("queue %v / %d", s.Queue.Timeout, s.Queue.Size)
			}
			if s.Tokens.PerCall != 314 || s.Tokens.Budget != 48*314 {
				t.Errorf("tokens per call %v, budget %d", s.Tokens.PerCall, s.Tokens.Budget)
			}
			if !near(s.Agent.RPS, safe/4) || !near(s.Agent.RPSYellow, safe/2) || !near(s.Agent.RPSRed, safe) || s.Agent.TokensPerRequest != 4*314 || s.Agent.CallsForTarget != 8400 {
				t.Errorf("agent %+v", s.Agent)
			}
		}},
		{"gateways split the limit, the queue and the budget", flagged{slots: 48, mean: 200 * time.Millisecond, p99: 600 * time.Millisecond, gateways: 3, budget: time.Second, prompt: 100, maxTok: 0}, func(t *testing.T, s Sizing) {
			if !near(s.Limit.Raw, 240*0.6/3) || s.Limit.Limit != 48 || !near(s.Limit.PerSlots, 16) {
				t.Errorf("limit %v → %d, per slots %v", s.Limit.Raw, s.Limit.Limit, s.Limit.PerSlots)
			}
			if s.Queue.Size != 32 || s.Tokens.Budget != 1600 {
				t.Errorf("queue %d, token budget %d; want 32, 1600", s.Queue.Size, s.Tokens.Budget)
			}
		}},
		{"budget below p99: no room to queue", flagged{slots: 4, mean: time.Second, p99: 3 * time.Second, budget: 2 * time.Second}, func(t *testing.T, s Sizing) {
			if s.Queue.Timeout != -time.Second || s.Queue.Size != 0 || s.Queue.Need != "" {
				t.Errorf("queue %+v", s.Queue)
			}
		}},
		{"p50 alone stands in for the mean", flagged{slots: 10, p50: 100 * time.Millisecond}, func(t *testing.T, s Sizing) {
			if s.Service.How != "p50" || !near(s.Safe.QPS, 100) || s.Queue.Need == "" || s.Tokens.Need == "" || s.Agent.Need == "" {
				t.Errorf("%v (how %s), needs: queue %q tokens %q agent %q", s, s.Service.How, s.Queue.Need, s.Tokens.Need, s.Agent.Need)
			}
		}},
		{"a given mean wins over p50/p99", flagged{slots: 10, mean: 500 * time.Millisecond, p50: 100 * time.Millisecond, p99: 900 * time.Millisecond}, func(t *testing.T, s Sizing) {
			if s.Service.How != "given" || !near(s.Safe.QPS, 20) {
				t.Errorf("%v (how %s)", s, s.Service.How)
			}
		}},
		{"degraded depths above K are capped", flagged{slots: 8, mean: time.Second, k: 1, yellow: 2, red: 3}, func(t *testing.T, s Sizing) {
			if s.Agent.K != 1 || s.Agent.Yellow != 1 || s.Agent.Red != 1 || !near(s.Agent.RPS, 8) {
				t.Errorf("agent %+v", s.Agent)
			}
		}},
		{"a target under capacity needs no more slots", flagged{slots: 50, mean: time.Second, target: 10}, func(t *testing.T, s Sizing) {
			if s.For.Slots != 10 || s.For.Share < 1 || s.Limit.AtTarget != 0 {
				t.Errorf("for %+v, at target %v", s.For, s.Limit.AtTarget)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compute(tt.in.inputs())
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestComputeSad(t *testing.T) {
	tests := []struct {
		name string
		in   Inputs
		want []string // every fragment must be in the error
	}{
		{"nothing", Inputs{}, []string{"nothing to plan"}},
		{"tokens alone", Inputs{PromptTokens: Of(10.0, FromFlag), Budget: Of(time.Second, FromFlag)}, []string{"nothing to plan"}},
		{"zero slots", flagged{slots: -1, mean: time.Second}.inputs(), []string{"slots -1: want ≥ 1"}},
		{"p99 below p50", flagged{slots: 1, p50: 2 * time.Second, p99: time.Second}.inputs(), []string{"p99 1s is below p50 2s"}},
		{"several at once", Inputs{
			Nodes: Of(0, FromFlag), Gateways: Of(-2, FromFlag), Mean: Of(-time.Second, FromFlag),
			Budget: Of(time.Duration(0), FromFlag), Target: Of(math.NaN(), FromFlag), PromptTokens: Of(-1.0, FromFlag),
			MaxTokens: Of(-5, FromFlag), SubTasks: Of(0, FromFlag), YellowSubTasks: Of(0, FromFlag),
		}, []string{"--nodes 0", "--gateways -2", "--mean -1s", "--budget 0s", "--target NaN", "--prompt-tokens -1", "--max-tokens -5", "--subtasks 0", "yellow sub-tasks 0"}},
		{"infinite target", flagged{slots: 50, mean: 1200 * time.Millisecond, target: math.Inf(1)}.inputs(), []string{"--target +Inf req/s: want a finite load"}},
		{"infinite target alone is not 'nothing to plan'", flagged{target: math.Inf(1)}.inputs(), []string{"--target +Inf"}},
		{"target above the bound", flagged{slots: 1, mean: time.Second, target: 2e9}.inputs(), []string{"--target 2e+09 req/s: want ≤ 1,000,000,000 req/s"}},
		{"infinite prompt tokens", flagged{slots: 50, mean: time.Second, prompt: math.Inf(1)}.inputs(), []string{"--prompt-tokens +Inf: want a finite number of tokens"}},
		{"answer tokens above the bound", flagged{slots: 50, mean: time.Second, maxTok: 2_000_000_000}.inputs(), []string{"--max-tokens 2000000000: want ≤ 1,000,000,000"}},
		{"slots that overflow nodes × slots", flagged{slots: math.MaxInt, nodes: 2, mean: time.Second}.inputs(), []string{"--slots 9223372036854775807: want ≤ 1,000,000"}},
		{"C above its bound", flagged{slots: 1_000_000, nodes: 1001, mean: time.Second}.inputs(), []string{"C = nodes × slots = 1001 × 1000000 = 1,001,000,000: want ≤ 1,000,000,000"}},
		{"a day-long mean", flagged{slots: 1, mean: 25 * time.Hour}.inputs(), []string{"--mean 25h0m0s: want ≤ 24h0m0s"}},
		{"a spread whose mean overflows", flagged{slots: 50, p50: time.Nanosecond, p99: 24 * time.Hour}.inputs(), []string{"p50 1ns and p99 24h0m0s", "want ≤ 24h0m0s"}},
		{"a limit too large to print", flagged{slots: 1_000_000, nodes: 1000, mean: time.Nanosecond, p99: 24 * time.Hour}.inputs(), []string{"the concurrency limit", "want ≤ 1,000,000,000,000,000"}},
		{"a queue too large to print", flagged{slots: 1_000_000, nodes: 1000, mean: time.Nanosecond, budget: 24 * time.Hour}.inputs(), []string{"the queue size"}},
		{"a token budget too large to print", flagged{slots: 1_000_000, nodes: 1000, mean: time.Second, prompt: 1e9, maxTok: 1e9}.inputs(), []string{"the token budget"}},
		{"a run's figure is named with its source", Inputs{SlotsPerNode: Of(0, FromRun), Mean: Of(time.Second, FromRun), PromptTokens: Of(math.Inf(1), FromRun)}, []string{"slots (run.json) 0", "prompt tokens (run.json) +Inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compute(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !IsUsage(err) {
				t.Errorf("%v is not a usage error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestComputeBounds: inputs at their bounds are accepted and give exact,
// positive figures.
func TestComputeBounds(t *testing.T) {
	tests := []struct {
		name  string
		in    flagged
		check func(s Sizing) bool
	}{
		{"largest C", flagged{slots: MaxCount, nodes: MaxSlots / MaxCount, mean: time.Second}, func(s Sizing) bool { return s.Slots.C == MaxSlots && s.Safe.QPS == MaxSlots }},
		{"largest target for a day-long call", flagged{target: MaxTarget, mean: MaxDuration, slots: 1}, func(s Sizing) bool { return s.For.Slots == int(MaxTarget*MaxDuration.Seconds()) }},
		{"largest token budget", flagged{slots: MaxCount, nodes: 1000, mean: time.Second, prompt: 1e5, maxTok: 1e5}, func(s Sizing) bool { return s.Tokens.Budget == MaxSlots*200_000 }},
		{"a wide but finite spread", flagged{slots: 50, p50: time.Millisecond, p99: 10 * time.Second}, func(s Sizing) bool { return s.Service.T > 0 && s.Service.T <= MaxDuration }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compute(tt.in.inputs())
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s) {
				t.Errorf("sizing %v", s)
			}
		})
	}
}

func TestOverride(t *testing.T) {
	run := Inputs{
		SlotsPerNode: Of(16, FromRun), Nodes: Of(3, FromRun),
		Mean: Of(224*time.Millisecond, FromRun), P50: Of(200*time.Millisecond, FromRun), P99: Of(600*time.Millisecond, FromRun),
		Dist: Of("lognormal", FromRun), Gateways: Of(1, FromRun),
	}
	// What if there were 3 gateways? Only that changes.
	in := run
	in.Override(Inputs{Gateways: Of(3, FromFlag)})
	if in.Gateways != Of(3, FromFlag) || in.Mean != run.Mean || in.Dist != run.Dist {
		t.Errorf("gateways override: %+v", in)
	}
	// A p99 by hand: the run's mean (of its own distribution) no longer
	// holds; it is derived again from the run's p50 and the new p99.
	in = run
	in.Override(Inputs{P99: Of(time.Second, FromFlag)})
	if in.Mean.Set() || in.Dist.Set() || in.P50 != run.P50 || in.P99 != Of(time.Second, FromFlag) {
		t.Errorf("p99 override: %+v", in)
	}
	s, err := Compute(in)
	if err != nil || s.Service.How != "lognormal" || s.Service.T != LognormalMean(200*time.Millisecond, time.Second) {
		t.Errorf("after the p99 override: %v (%s), %v", s.Service.T, s.Service.How, err)
	}
	// A mean by hand replaces the run's.
	in = run
	in.Override(Inputs{Mean: Of(time.Second, FromFlag)})
	if in.Mean != Of(time.Second, FromFlag) || in.P99 != run.P99 {
		t.Errorf("mean override: %+v", in)
	}
}

func TestLognormalMean(t *testing.T) {
	// p99 = p50: no spread, the mean is the median.
	if got := LognormalMean(time.Second, time.Second); got != time.Second {
		t.Errorf("no spread: %v", got)
	}
	// The fake model's own figure for its defaults: mean ≈ 224 ms.
	if got := LognormalMean(200*time.Millisecond, 600*time.Millisecond); got.Round(time.Millisecond) != 224*time.Millisecond {
		t.Errorf("200/600 ms: %v, want ≈ 224 ms", got)
	}
}

func TestFormatting(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{num(1234567.891, 1), "1,234,567.9"},
		{num(-1234, 0), "-1,234"},
		{num(12, 2), "12.00"},
		{num(math.NaN(), 1), "n/a"},
		{rps(214.66), "214.7 req/s"},
		{rps(2100), "2,100 req/s"},
		{rps(125), "125 req/s"},
		{dur(1400 * time.Millisecond), "1.4 s"},
		{dur(2 * time.Second), "2 s"},
		{dur(223600 * time.Microsecond), "224 ms"},
		{dur(2500 * time.Microsecond), "2.5 ms"},
		{dur(-time.Second), "−1 s"},
		{dur(0), "0 s"},
		{dur(math.MinInt64), "−9223372036.855 s"}, // no positive counterpart: must not recurse forever
		{secs(223600 * time.Microsecond), "0.224 s"},
		{secs(22360 * time.Microsecond), "0.0224 s"},
		{secs(1500 * time.Millisecond), "1.5 s"},
		{pct(0.94), "94 %"},
		{pct(0.05), "5.0 %"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
