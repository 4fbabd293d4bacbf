package plan

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Plan is a computed plan, ready to print.
type Plan struct {
	Parts
	Sizing Sizing
}

// New computes the plan of p. Its error is a *UsageError when the inputs
// are out of range, contradict each other, or allow no part of the plan.
func New(p Parts) (*Plan, error) {
	s, err := Compute(p.Inputs)
	if err != nil {
		return nil, err
	}
	return &Plan{Parts: p, Sizing: s}, nil
}

// Write prints the plan: the figures and where each came from, then each
// sizing rule with its formula, the numbers filled in and the result in
// units, then what the run was set to and what it did.
func (p *Plan) Write(w io.Writer) error {
	var b strings.Builder
	pr := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	in, s := p.Inputs, p.Sizing

	if p.Dir != "" {
		pr("levee plan · %s", p.Title)
		pr("run folder: %s", p.Dir)
		if p.Note != "" {
			pr("note: %s", p.Note)
		}
		if p.Observed != nil && p.Observed.Partial {
			pr("note: the run was killed before its summary: counters are rebuilt from its samples, latencies are unknown")
		}
	} else {
		pr("levee plan · from the figures given")
	}

	// The figures.
	pr("")
	pr("%-22s %-40s %s", "The figures", "", "from")
	fig := func(name, value string, from Source) {
		pr("%s", strings.TrimRight(fmt.Sprintf("  %-20s %-40s %s", name, value, from), " "))
	}
	if s.Slots.Need == "" {
		v := fmt.Sprintf("%d calls at once", s.Slots.C)
		if s.Slots.Nodes > 1 || !s.Slots.NodesDefault {
			v = fmt.Sprintf("%d node%s × %d slots = %s", s.Slots.Nodes, plural(s.Slots.Nodes), s.Slots.Per, v)
		}
		fig("model slots C", v, in.SlotsPerNode.From)
	} else {
		fig("model slots C", "unknown", "")
	}
	if in.P50.Set() || in.P99.Set() {
		var parts []string
		if in.P50.Set() {
			parts = append(parts, "p50 "+dur(in.P50.V))
		}
		if in.P99.Set() {
			parts = append(parts, "p99 "+dur(in.P99.V))
		}
		v := strings.Join(parts, ", ")
		if in.Dist.Set() {
			v += " (" + in.Dist.V + ")"
		}
		fig("service time", v, firstSet(in.P50.From, in.P99.From))
	}
	switch s.Service.How {
	case "given":
		fig("mean service time T", dur(s.Service.T), in.Mean.From)
	case "lognormal":
		fig("mean service time T", dur(s.Service.T)+" (lognormal through p50 and p99)", "derived")
	case "p50":
		fig("mean service time T", dur(s.Service.T)+" (the p50: no mean or p99 given)", "assumed")
	default:
		fig("mean service time T", "unknown", "")
	}
	gw := 1
	if in.Gateways.Set() {
		gw = in.Gateways.V
		fig("gateways N", strconv.Itoa(gw), in.Gateways.From)
	} else {
		fig("gateways N", "1", FromDefault)
	}
	if in.Target.Set() {
		v := rps(in.Target.V)
		if in.Target.From == FromRun || in.Target.From == FromLesson {
			v += " (the peak offered)"
		}
		fig("target load", v, in.Target.From)
	} else {
		fig("target load", "none given (--target)", "")
	}
	if in.PromptTokens.Set() || in.MaxTokens.Set() {
		fig("tokens per call", fmt.Sprintf("%s prompt + %d answer", num(in.PromptTokens.V, 0), in.MaxTokens.V), firstSet(in.PromptTokens.From, in.MaxTokens.From))
	}
	if in.Budget.Set() {
		v := dur(in.Budget.V)
		if in.Budget.From == FromRun || in.Budget.From == FromLesson {
			v += " (the clients' timeout)"
		}
		fig("latency budget", v, in.Budget.From)
	}
	if in.SubTasks.Set() {
		k := in.SubTasks.V
		fig("agent sub-tasks K", fmt.Sprintf("%d (yellow %d, red %d)", k, min(depth(in.YellowSubTasks, k), k), min(depth(in.RedSubTasks, k), k)), in.SubTasks.From)
	}

	// 1 · seed 000.
	section(&b, "1 · Safe throughput (seed 000)")
	if s.Safe.Need != "" {
		pr("    needs %s", s.Safe.Need)
	} else {
		pr("    QPS_safe = C / T = %d / %s = %s", s.Slots.C, secs(s.Service.T), rps(s.Safe.QPS))
		pr("    Above it calls only wait: every slot is already busy.")
		if o := p.Observed; o != nil {
			if o.CapacityMeasuredRPS > 0 {
				v := fmt.Sprintf("    measured: %s finished while every slot was busy (%s of QPS_safe", rps(o.CapacityMeasuredRPS), pct(o.CapacityMeasuredRPS/s.Safe.QPS))
				if len(o.Kills) > 0 {
					v += "; the ticks with a node down count too"
				}
				pr("%s)", v)
			} else {
				pr("    measured: the slots were never all busy at once, so the run did not measure its capacity")
			}
			pr("    goodput: %s of ok answers over the run (%s of QPS_safe)", rps(o.GoodputRPS), pct(o.GoodputRPS/s.Safe.QPS))
			switch o.ServiceFrom {
			case "samples":
				pr("    observed mean service time: %s (median over the run of live slots / the capacity the lab measured)", dur(o.ServiceT))
			case "summary":
				pr("    observed mean service time: %s (C / the run's mean capacity of %s)", dur(o.ServiceT), rps(o.CapacityRPS))
			}
		}
	}

	// 2 · seed 001.
	section(&b, "2 · Slots for the target load (seed 001)")
	if s.For.Need != "" {
		pr("    needs %s", s.For.Need)
	} else {
		v := fmt.Sprintf("%s slot%s", num(float64(s.For.Slots), 0), plural(s.For.Slots))
		if s.For.Nodes > 0 {
			v += fmt.Sprintf(" (%s node%s of %d)", num(float64(s.For.Nodes), 0), plural(s.For.Nodes), in.SlotsPerNode.V)
		}
		pr("    slots = ⌈target × T⌉ = ⌈%s × %s⌉ = %s", rps(s.For.Target), secs(s.Service.T), v)
		switch {
		case s.For.Share == 0:
		case s.For.Share >= 1:
			pr("    you have %d: enough for the target.", s.Slots.C)
		default:
			pr("    you have %d: enough for %s of the target; the gateway must shed the rest, early and cheaply.", s.Slots.C, pct(s.For.Share))
		}
	}

	// 3 · seed 002.
	section(&b, "3 · Concurrency limit per gateway (seed 002)")
	if s.Limit.Need != "" {
		pr("    needs %s", s.Limit.Need)
	} else {
		pr("    limit = QPS × P99 / N = %s × %s / %d = %s → %s call%s in flight", rps(s.Limit.QPS), secs(s.Limit.P99), s.Limit.N, num(s.Limit.Raw, 1), num(float64(s.Limit.Limit), 0), plural(s.Limit.Limit))
		if s.Limit.QPSIs == "QPS_safe" {
			pr("    QPS is QPS_safe, what the backend can serve.")
		} else {
			pr("    QPS is the target load: the backend's own QPS_safe is unknown.")
		}
		if s.Limit.AtTarget > 0 {
			pr("    Sized for the %s that arrive instead, it would be %s: far more than the slots.", rps(in.Target.V), num(math.Ceil(s.Limit.AtTarget-1e-9), 0))
		}
		if s.Limit.Little > 0 {
			line := fmt.Sprintf("    By Little's law QPS × T / N = %s calls are in service on average", num(s.Limit.Little, 1))
			if s.Limit.PerSlots > 0 {
				line += fmt.Sprintf(" (C / N = %s slots per gateway)", num(s.Limit.PerSlots, 1))
			}
			pr("%s;", line)
			pr("    the rest of the limit covers slow calls (P99 > T), and waits inside the nodes when every call is slow.")
		}
		if st := p.Setup; st != nil {
			switch {
			case !st.Bulkhead:
				pr("    this run: the bulkhead was off: no concurrency limit at all.")
			case st.Algorithm == "static":
				pr("    this run: static limit %d per gateway.", st.Limit)
			default:
				pr("    this run: %s (adaptive) limit, starting at %d per gateway, kept within %d..%d.", st.Algorithm, st.Limit, st.Min, st.Max)
			}
		}
	}

	// 4 · queue.
	section(&b, "4 · Queue for a latency budget")
	if s.Queue.Need != "" {
		pr("    needs %s", s.Queue.Need)
	} else {
		svc := "p99"
		if !s.Queue.ByP99 {
			svc = "T"
		}
		pr("    queue timeout ≤ budget − %s = %s − %s = %s", svc, dur(s.Queue.Budget), dur(s.Queue.Service), dur(s.Queue.Timeout))
		if s.Queue.Timeout <= 0 {
			pr("    No room to wait: a call that waits at all answers too late. Fail fast: no queue.")
		} else {
			pr("    (a call that waited longer answers after its caller gave up)")
			pr("    queue size ≤ QPS_safe × timeout / N = %s × %s / %d = %s call%s waiting per gateway", rps(s.Safe.QPS), secs(s.Queue.Timeout), gw, num(float64(s.Queue.Size), 0), plural(s.Queue.Size))
			pr("    (more could not start before their timeout: they would only wait to be refused)")
		}
		if st := p.Setup; st != nil && st.Bulkhead {
			v := fmt.Sprintf("    this run: queue %d, timeout %s", st.QueueSize, dur(st.QueueTimeout))
			switch {
			case s.Queue.Timeout <= 0:
				v += ": any queue is too long for this budget."
			case st.QueueSize <= s.Queue.Size && st.QueueTimeout <= s.Queue.Timeout:
				v += ": within both bounds (less waiting, more shedding)."
			default:
				v += ": beyond the bound: some waiters answer too late."
			}
			pr("%s", v)
		}
	}

	// 5 · tokens.
	section(&b, "5 · Token budget (seed 004)")
	if s.Tokens.Need != "" {
		pr("    needs %s", s.Tokens.Need)
	} else {
		pr("    tokens per call = prompt + answer = %s + %d = %s tokens", num(s.Tokens.Prompt, 0), s.Tokens.Answer, num(s.Tokens.PerCall, 0))
		pr("    budget = C × tokens per call / N = %d × %s / %d = %s tokens in flight per gateway", s.Slots.C, num(s.Tokens.PerCall, 0), gw, num(float64(s.Tokens.Budget), 0))
		pr("    (what the slots can work on at once; a big prompt takes the room of several small ones)")
		if st := p.Setup; st != nil {
			v := fmt.Sprintf("    this run: %s tokens", num(float64(st.TokenBudget), 0))
			if !st.Budget {
				v += " (the budget defense was off)"
			}
			pr("%s.", v)
		}
	}

	// 6 · agent.
	section(&b, "6 · Agent amplification (seed 004)")
	if s.Agent.Need != "" {
		pr("    needs %s", s.Agent.Need)
	} else {
		pr("    one agent request = K = %d model calls: ×%d the load of a plain call", s.Agent.K, s.Agent.K)
		pr("    agent requests/s = QPS_safe / K = %s / %d = %s", num(s.Safe.QPS, 1), s.Agent.K, rps(s.Agent.RPS))
		pr("    degraded: yellow (%d call%s) %s · red (%d call%s) %s", s.Agent.Yellow, plural(s.Agent.Yellow), rps(s.Agent.RPSYellow), s.Agent.Red, plural(s.Agent.Red), rps(s.Agent.RPSRed))
		if s.Agent.TokensPerRequest > 0 {
			pr("    tokens per agent request = K × tokens per call = %d × %s = %s", s.Agent.K, num(s.Tokens.PerCall, 0), num(s.Agent.TokensPerRequest, 0))
		}
		if s.Agent.CallsForTarget > 0 {
			pr("    if the target load were all agent requests: %s × %d = %s model calls/s", rps(in.Target.V), s.Agent.K, num(s.Agent.CallsForTarget, 0))
		}
		if st := p.Setup; st != nil {
			share := "no agent requests"
			if st.AgentShare > 0 {
				share = pct(st.AgentShare) + " of requests to the agent route"
			}
			pr("    this run: %s; amplification cap %d sub-calls in flight per gateway.", share, st.MaxSubcalls)
		}
	}

	if p.Observed != nil {
		p.writeObserved(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeObserved is part 7: what the run's concurrency limit did.
func (p *Plan) writeObserved(b *strings.Builder) {
	pr := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	o, st := p.Observed, p.Setup
	section(b, "7 · What the run's limit did")
	if st != nil && !st.Bulkhead {
		pr("    the bulkhead was off: there was no limit to settle.")
		return
	}
	gw := 1
	if p.Inputs.Gateways.Set() {
		gw = p.Inputs.Gateways.V
	}
	c := float64(p.Sizing.Slots.C)
	if len(o.Phases) == 0 {
		pr("    not recorded: this folder has no samples. Record the run (levee run --quick EXPERIMENT.yaml)")
		pr("    and plan its folder to see the limit move.")
	} else {
		algo := ""
		if st != nil {
			algo = st.Algorithm + " limit, "
		}
		pr("    %s%d samples; medians over each phase, all gateways together", algo, o.Samples)
		pr("    (slots: live model slots · load: offered ÷ capacity · service: observed mean service time)")
		pr("      %-22s %-12s %5s %5s %9s %5s %7s", "phase", "time", "limit", "slots", "in flight", "load", "service")
		for _, ph := range o.Phases {
			label := ph.Label
			if label == "" {
				label = "no fault"
			}
			svc := "-"
			if ph.ServiceT > 0 {
				svc = dur(ph.ServiceT)
			}
			load := "-"
			if ph.Load > 0 {
				load = "×" + num(ph.Load, 1)
			}
			pr("      %-22s %-12s %5s %5s %9s %5s %7s", clip(label, 22), fmt.Sprintf("%s–%s s", num(ph.From, 1), num(ph.To, 1)),
				num(ph.Limit, 0), num(ph.LiveSlots, 0), num(ph.Inflight, 0), load, svc)
		}
		line := fmt.Sprintf("    at the end (median of the last %g s): %s", endWindow, num(o.EndLimit, 0))
		if gw > 1 {
			line += fmt.Sprintf(" = %s per gateway", num(o.EndLimit/float64(gw), 1))
		}
		if c > 0 {
			line += fmt.Sprintf(", against %s slots (%s × C)", num(c, 0), num(o.EndLimit/c, 2))
		}
		pr("%s", line)
	}
	for _, k := range o.Kills {
		if k.Settled {
			pr("    after the node kill at %s s the limit's 3 s median settled within ±15 %% of the %s live slots in %s s.", num(k.At, 1), num(k.LiveSlots, 0), num(k.SettleS, 1))
		} else {
			pr("    after the node kill at %s s the limit never settled within ±15 %% of the %s live slots (%s s watched).", num(k.At, 1), num(k.LiveSlots, 0), num(k.SettleS, 1))
		}
	}
	if o.AdmittedP50 > 0 {
		pr("    admitted calls took p50 %s, p99 %s (queue wait included).", dur(o.AdmittedP50), dur(o.AdmittedP99))
	}
}

func section(b *strings.Builder, title string) {
	b.WriteString("\n" + title + "\n")
}

func firstSet(s ...Source) Source {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// rps is a rate in requests a second: "214.7 req/s", "2,100 req/s".
func rps(v float64) string {
	if math.Abs(v) >= 1000 || v == math.Trunc(v) {
		return num(v, 0) + " req/s"
	}
	return num(v, 1) + " req/s"
}

// pct is a share as a percentage: "94 %".
func pct(v float64) string {
	if v < 0.1 {
		return num(v*100, 1) + " %"
	}
	return num(v*100, 0) + " %"
}

// dur is a duration for people: "224 ms", "1.4 s".
func dur(d time.Duration) string {
	if d < 0 {
		return "−" + dur(-d)
	}
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "0 s"
	case ms < 10:
		return trim(strconv.FormatFloat(ms, 'f', 1, 64)) + " ms"
	case d < time.Second:
		return num(ms, 0) + " ms"
	}
	return trim(strconv.FormatFloat(d.Seconds(), 'f', 3, 64)) + " s"
}

// secs is a duration in seconds for a formula, to 3 significant digits
// under a second: "0.224 s", "0.0224 s", "1.2 s".
func secs(d time.Duration) string {
	v, decimals := d.Seconds(), 3
	if v > 0 && v < 1 {
		decimals = 2 - int(math.Floor(math.Log10(v)))
	}
	return trim(strconv.FormatFloat(v, 'f', decimals, 64)) + " s"
}

// num formats v with the given decimals and thousands separators; trailing
// zero decimals are kept (they say how precise the figure is).
func num(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var out strings.Builder
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			out.WriteByte(',')
		}
		out.WriteRune(ch)
	}
	r := out.String()
	if frac != "" {
		r += "." + frac
	}
	if neg {
		r = "-" + r
	}
	return r
}

// trim drops trailing zero decimals: "1.400" → "1.4", "2.000" → "2".
func trim(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
