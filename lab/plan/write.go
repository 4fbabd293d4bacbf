package plan

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
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
	var o out
	for _, part := range []func(*out){
		p.writeHeader, p.writeFigures, p.writeSafe, p.writeForTarget,
		p.writeLimit, p.writeQueue, p.writeTokens, p.writeAgent, p.writeObserved,
	} {
		part(&o)
	}
	_, err := io.WriteString(w, o.String())
	return err
}

// out collects the plan's text.
type out struct{ strings.Builder }

// pr writes one line.
func (o *out) pr(format string, args ...any) { fmt.Fprintf(o, format+"\n", args...) }

// section starts a part of the plan.
func (o *out) section(title string) { o.WriteString("\n" + title + "\n") }

// gateways is N, 1 when unknown.
func (p *Plan) gateways() int {
	if p.Inputs.Gateways.Set() {
		return p.Inputs.Gateways.V
	}
	return 1
}

// writeHeader names the run (or says the figures were given by hand).
func (p *Plan) writeHeader(o *out) {
	if p.Dir != "" {
		o.pr("levee plan · %s", p.Title)
		o.pr("run folder: %s", p.Dir)
		if p.Note != "" {
			o.pr("note: %s", p.Note)
		}
		if p.Observed != nil && p.Observed.Partial {
			o.pr("note: the run was killed before its summary: counters are rebuilt from its samples, latencies are unknown")
		}
	} else {
		o.pr("levee plan · from the figures given")
	}
}

// writeFigures lists the inputs and where each came from.
func (p *Plan) writeFigures(o *out) {
	in, s := p.Inputs, p.Sizing
	o.pr("")
	o.pr("%-22s %-40s %s", "The figures", "", "from")
	fig := func(name, value string, from Source) {
		o.pr("%s", strings.TrimRight(fmt.Sprintf("  %-20s %-40s %s", name, value, from), " "))
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
	if in.Gateways.Set() {
		fig("gateways N", strconv.Itoa(in.Gateways.V), in.Gateways.From)
	} else {
		fig("gateways N", "1", FromDefault)
	}
	if in.Target.Set() {
		v := rps(in.Target.V)
		if in.Target.From == FromRun || in.Target.From == FromLesson || in.Target.From == FromSamples {
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
}

// writeSafe is seed 000: QPS_safe = C / T, beside what the run measured.
func (p *Plan) writeSafe(o *out) {
	s := p.Sizing
	o.section("1 · Safe throughput (seed 000)")
	if s.Safe.Need != "" {
		o.pr("    needs %s", s.Safe.Need)
	} else {
		o.pr("    QPS_safe = C / T = %d / %s = %s", s.Slots.C, secs(s.Service.T), rps(s.Safe.QPS))
		o.pr("    Above it calls only wait: every slot is already busy.")
		if ob := p.Observed; ob != nil {
			if ob.CapacityMeasuredRPS > 0 {
				v := fmt.Sprintf("    measured: %s finished while every slot was busy (%s of QPS_safe", rps(ob.CapacityMeasuredRPS), pct(ob.CapacityMeasuredRPS/s.Safe.QPS))
				if len(ob.Kills) > 0 {
					v += "; the ticks with a node down count too"
				}
				o.pr("%s)", v)
			} else {
				o.pr("    measured: the slots were never all busy at once, so the run did not measure its capacity")
			}
			o.pr("    goodput: %s of ok answers over the run (%s of QPS_safe)", rps(ob.GoodputRPS), pct(ob.GoodputRPS/s.Safe.QPS))
			switch ob.ServiceFrom {
			case "samples":
				o.pr("    observed mean service time: %s (median over the run of live slots / the capacity the lab measured)", dur(ob.ServiceT))
			case "summary":
				o.pr("    observed mean service time: %s (C / the run's mean capacity of %s)", dur(ob.ServiceT), rps(ob.CapacityRPS))
			}
		}
	}
}

// writeForTarget is seed 001: the slots a target load needs.
func (p *Plan) writeForTarget(o *out) {
	in, s := p.Inputs, p.Sizing
	o.section("2 · Slots for the target load (seed 001)")
	if s.For.Need != "" {
		o.pr("    needs %s", s.For.Need)
	} else {
		v := fmt.Sprintf("%s slot%s", num(float64(s.For.Slots), 0), plural(s.For.Slots))
		if s.For.Nodes > 0 {
			v += fmt.Sprintf(" (%s node%s of %d)", num(float64(s.For.Nodes), 0), plural(s.For.Nodes), in.SlotsPerNode.V)
		}
		o.pr("    slots = ⌈target × T⌉ = ⌈%s × %s⌉ = %s", rps(s.For.Target), secs(s.Service.T), v)
		switch {
		case s.For.Share == 0:
		case s.For.Share >= 1:
			o.pr("    you have %d: enough for the target.", s.Slots.C)
		default:
			o.pr("    you have %d: enough for %s of the target; the gateway must shed the rest, early and cheaply.", s.Slots.C, pct(s.For.Share))
		}
	}
}

// writeLimit is seed 002: the per-gateway concurrency limit.
func (p *Plan) writeLimit(o *out) {
	in, s := p.Inputs, p.Sizing
	o.section("3 · Concurrency limit per gateway (seed 002)")
	if s.Limit.Need != "" {
		o.pr("    needs %s", s.Limit.Need)
	} else {
		o.pr("    limit = QPS × P99 / N = %s × %s / %d = %s → %s call%s in flight", rps(s.Limit.QPS), secs(s.Limit.P99), s.Limit.N, num(s.Limit.Raw, 1), num(float64(s.Limit.Limit), 0), plural(s.Limit.Limit))
		if s.Limit.QPSIs == "QPS_safe" {
			o.pr("    QPS is QPS_safe, what the backend can serve.")
		} else {
			o.pr("    QPS is the target load: the backend's own QPS_safe is unknown.")
		}
		if s.Limit.AtTarget > 0 {
			o.pr("    Sized for the %s that arrive instead, it would be %s: far more than the slots.", rps(in.Target.V), num(math.Ceil(s.Limit.AtTarget-1e-9), 0))
		}
		if s.Limit.Little > 0 {
			line := fmt.Sprintf("    By Little's law QPS × T / N = %s calls are in service on average", num(s.Limit.Little, 1))
			if s.Limit.PerSlots > 0 {
				line += fmt.Sprintf(" (C / N = %s slots per gateway)", num(s.Limit.PerSlots, 1))
			}
			o.pr("%s;", line)
			o.pr("    the room above that is for slow calls (P99 > T); calls admitted beyond the slots wait inside")
			o.pr("    the nodes, where priority no longer applies.")
		}
		if st := p.Setup; st != nil {
			switch {
			case !st.Bulkhead:
				o.pr("    this run: the bulkhead was off: no concurrency limit at all.")
			case st.Algorithm == "static":
				o.pr("    this run: static limit %d per gateway.", st.Limit)
			default:
				o.pr("    this run: %s (adaptive) limit, starting at %d per gateway, kept within %d..%d.", st.Algorithm, st.Limit, st.Min, st.Max)
			}
		}
	}
}

// writeQueue bounds the wait queue for a latency budget.
func (p *Plan) writeQueue(o *out) {
	s := p.Sizing
	gw := p.gateways()
	o.section("4 · Queue for a latency budget")
	if s.Queue.Need != "" {
		o.pr("    needs %s", s.Queue.Need)
	} else {
		svc := "p99"
		if !s.Queue.ByP99 {
			svc = "T"
		}
		o.pr("    queue timeout ≤ budget − %s = %s − %s = %s", svc, dur(s.Queue.Budget), dur(s.Queue.Service), dur(s.Queue.Timeout))
		if s.Queue.Timeout <= 0 {
			o.pr("    No room to wait: a call that waits at all answers too late. Fail fast: no queue.")
		} else {
			o.pr("    (a call that waited longer answers after its caller gave up)")
			o.pr("    queue size ≤ QPS_safe × timeout / N = %s × %s / %d = %s call%s waiting per gateway", rps(s.Safe.QPS), secs(s.Queue.Timeout), gw, num(float64(s.Queue.Size), 0), plural(s.Queue.Size))
			o.pr("    (more could not start before their timeout: they would only wait to be refused)")
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
			o.pr("%s", v)
		}
	}
}

// writeTokens is seed 004's token budget.
func (p *Plan) writeTokens(o *out) {
	s := p.Sizing
	gw := p.gateways()
	o.section("5 · Token budget (seed 004)")
	if s.Tokens.Need != "" {
		o.pr("    needs %s", s.Tokens.Need)
	} else {
		o.pr("    tokens per call = prompt + answer = %s + %d = %s tokens", num(s.Tokens.Prompt, 0), s.Tokens.Answer, num(s.Tokens.PerCall, 0))
		o.pr("    budget = C × tokens per call / N = %d × %s / %d = %s tokens in flight per gateway", s.Slots.C, num(s.Tokens.PerCall, 0), gw, num(float64(s.Tokens.Budget), 0))
		o.pr("    (what the slots can work on at once; a big prompt takes the room of several small ones)")
		if st := p.Setup; st != nil {
			v := fmt.Sprintf("    this run: %s tokens", num(float64(st.TokenBudget), 0))
			if !st.Budget {
				v += " (the budget defense was off)"
			}
			o.pr("%s.", v)
		}
	}
}

// writeAgent is seed 004's agent amplification.
func (p *Plan) writeAgent(o *out) {
	in, s := p.Inputs, p.Sizing
	o.section("6 · Agent amplification (seed 004)")
	if s.Agent.Need != "" {
		o.pr("    needs %s", s.Agent.Need)
	} else {
		o.pr("    one agent request = K = %d model calls: ×%d the load of a plain call", s.Agent.K, s.Agent.K)
		o.pr("    agent requests/s = QPS_safe / K = %s / %d = %s", num(s.Safe.QPS, 1), s.Agent.K, rps(s.Agent.RPS))
		o.pr("    degraded: yellow (%d call%s) %s · red (%d call%s) %s", s.Agent.Yellow, plural(s.Agent.Yellow), rps(s.Agent.RPSYellow), s.Agent.Red, plural(s.Agent.Red), rps(s.Agent.RPSRed))
		if s.Agent.TokensPerRequest > 0 {
			o.pr("    tokens per agent request = K × tokens per call = %d × %s = %s", s.Agent.K, num(s.Tokens.PerCall, 0), num(s.Agent.TokensPerRequest, 0))
		}
		if s.Agent.CallsForTarget > 0 {
			o.pr("    if the target load were all agent requests: %s × %d = %s model calls/s", rps(in.Target.V), s.Agent.K, num(s.Agent.CallsForTarget, 0))
		}
		if st := p.Setup; st != nil {
			share := "no agent requests"
			if st.AgentShare > 0 {
				share = pct(st.AgentShare) + " of requests to the agent route"
			}
			o.pr("    this run: %s; amplification cap %d sub-calls in flight per gateway.", share, st.MaxSubcalls)
		}
	}
}

// writeObserved is part 7: what the run's concurrency limit did.
func (p *Plan) writeObserved(o *out) {
	ob, st := p.Observed, p.Setup
	if ob == nil {
		return // a plan from flags: no run
	}
	o.section("7 · What the run's limit did")
	if st != nil && !st.Bulkhead {
		o.pr("    the bulkhead was off: there was no limit to settle.")
		return
	}
	gw := p.gateways()
	c := float64(p.Sizing.Slots.C)
	if len(ob.Phases) == 0 {
		file := "EXPERIMENT.yaml"
		if p.Lesson != "" {
			file = "experiments/" + p.Lesson + ".yaml"
		}
		o.pr("    not recorded: this folder has no samples. Record the run (levee run --quick %s)", file)
		o.pr("    and plan its folder to see the limit move.")
	} else {
		algo := ""
		if st != nil {
			algo = st.Algorithm + " limit, "
		}
		o.pr("    %s%d samples; medians over each phase, all gateways together", algo, ob.Samples)
		o.pr("    (slots: live model slots · load: offered ÷ capacity · service: observed mean service time)")
		o.pr("      %-22s %-12s %5s %5s %9s %5s %7s", "phase", "time", "limit", "slots", "in flight", "load", "service")
		for _, ph := range ob.Phases {
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
			o.pr("      %-22s %-12s %5s %5s %9s %5s %7s", clip(label, 22), fmt.Sprintf("%s–%s s", num(ph.From, 1), num(ph.To, 1)),
				num(ph.Limit, 0), num(ph.LiveSlots, 0), num(ph.Inflight, 0), load, svc)
		}
		line := fmt.Sprintf("    at the end (median of the last %g s): %s", endWindow, num(ob.EndLimit, 0))
		if gw > 1 {
			line += fmt.Sprintf(" = %s per gateway", num(ob.EndLimit/float64(gw), 1))
		}
		if c > 0 {
			line += fmt.Sprintf(", against %s slots (%s × C)", num(c, 0), num(ob.EndLimit/c, 2))
		}
		o.pr("%s", line)
	}
	for _, k := range ob.Kills {
		if k.Settled {
			o.pr("    after the node kill at %s s the limit's 3 s median settled within ±15 %% of the %s live slots in %s s.", num(k.At, 1), num(k.LiveSlots, 0), num(k.SettleS, 1))
		} else {
			o.pr("    after the node kill at %s s the limit never settled within ±15 %% of the %s live slots (%s s watched).", num(k.At, 1), num(k.LiveSlots, 0), num(k.SettleS, 1))
		}
	}
	if ob.AdmittedP50 > 0 {
		o.pr("    admitted calls took p50 %s, p99 %s (queue wait included).", dur(ob.AdmittedP50), dur(ob.AdmittedP99))
	}
}
