package experiment

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/lab/load"
)

// problems collects validation errors, each naming its field (and its
// line when the experiment came from a file).
type problems struct {
	e    *Experiment
	errs []error
}

func (p *problems) add(path, format string, args ...any) {
	p.errs = append(p.errs, p.e.errAt(path, format, args...))
}

// addStep reports a problem with a whole step at path, naming what the
// step is ("faults.0 (redis_outage): …").
func (p *problems) addStep(path, what, format string, args ...any) {
	p.errs = append(p.errs, p.e.errAtNamed(path, path+" ("+what+")", format, args...))
}

// Normalize fills defaults and validates. It is idempotent. Every problem
// is reported, each naming its field.
func (e *Experiment) Normalize() error {
	p := &problems{e: e}
	e.normalizeIdentity(p)
	e.normalizeSchedule(p)
	e.normalizeMix(p)
	e.normalizeClient(p)
	e.normalizeNodes(p)
	e.normalizeGateway(p)
	e.normalizeRedis(p)
	e.validateFaults(p)
	e.validateNarration(p)
	e.validateThresholds(p)
	if len(p.errs) == 0 {
		e.validateGatewayConfig(p)
	}
	return errors.Join(p.errs...)
}

// normalizeIdentity: name, title, tick and seed-independent basics.
func (e *Experiment) normalizeIdentity(p *problems) {
	if e.Name == "" {
		p.add("name", "required")
	} else if strings.ContainsAny(e.Name, "/\\ \t\n") {
		p.add("name", "%q: no spaces or slashes (it names the run folder)", e.Name)
	}
	if e.Title == "" {
		e.Title = e.Name
	}
	for i, a := range e.Articles {
		if len(a) != 3 || a < "000" || a > "004" {
			p.add(fmt.Sprintf("articles.%d", i), "%q: want a seed article number, 000..004", a)
		}
	}
	if e.Tick == 0 {
		e.Tick = Duration(DefaultTick)
	}
	if e.Tick == Forever || e.Tick.D() > DefaultTick || e.Tick.D() < 10*time.Millisecond {
		p.add("tick", "%s: want 10ms..250ms (at least 4 samples a second)", e.Tick)
	}
}

// normalizeSchedule: start rate, stages, duration and arrival process.
func (e *Experiment) normalizeSchedule(p *problems) {
	if !(e.StartRate >= 0 && e.StartRate <= load.MaxRate) { // NaN and ±Inf too
		p.add("start_rate", "%v: want 0..%.0f req/s", e.StartRate, load.MaxRate)
	}
	var sum time.Duration
	for i, s := range e.Stages {
		if s.Duration == Forever {
			p.add(fmt.Sprintf("stages.%d.duration", i), "forever is only for the experiment's duration")
		}
		if !(s.Target >= 0 && s.Target <= load.MaxRate) {
			p.add(fmt.Sprintf("stages.%d.target", i), "%v: want 0..%.0f req/s", s.Target, load.MaxRate)
		}
		sum += s.Duration.D()
	}
	switch {
	case e.Duration == 0 && len(e.Stages) == 0:
		p.add("duration", "an experiment needs stages or a duration")
	case e.Duration == 0:
		e.Duration = Duration(sum)
		if sum == 0 {
			p.add("stages", "the stages last 0s: give them durations or set duration")
		}
	}
	switch e.Arrival {
	case "":
		e.Arrival = load.ArrivalConstant
	case load.ArrivalConstant, load.ArrivalPoisson:
	default:
		p.add("arrival", "%q: want %s or %s", e.Arrival, load.ArrivalConstant, load.ArrivalPoisson)
	}
}

// normalizeClient: the generator's client timeout and outstanding cap.
func (e *Experiment) normalizeClient(p *problems) {
	if e.ClientTimeout == 0 {
		e.ClientTimeout = Duration(DefaultClientTimeout)
	}
	if e.ClientTimeout == Forever || e.ClientTimeout.D() < 10*time.Millisecond {
		p.add("client_timeout", "%s: want at least 10ms", e.ClientTimeout)
	}
	if e.MaxOutstanding == 0 {
		e.MaxOutstanding = DefaultMaxOutstanding
	}
	if e.MaxOutstanding < 1 || e.MaxOutstanding > 1<<20 {
		p.add("max_outstanding", "%d: want 1..1048576", e.MaxOutstanding)
	}
	e.validateClientRetry(p)
}

// normalizeNodes: the model tier's size and knobs.
func (e *Experiment) normalizeNodes(p *problems) {
	if e.Nodes.Count == 0 {
		e.Nodes.Count = DefaultNodes
	}
	if e.Nodes.Count < 1 || e.Nodes.Count > 32 {
		p.add("nodes.count", "%d: want 1..32", e.Nodes.Count)
	}
	if err := validateNodeKnobs(e.Nodes.Knobs); err != nil {
		p.add("nodes.knobs", "%v", err)
	}
	if m := e.Nodes.MaxTokens; m != 0 && fakemodel.CheckMaxTokensBound(m) != nil {
		p.add("nodes.max_tokens", "%d: want 1..%d (or absent: %d)", m, openai.MaxTokensCeiling, fakemodel.MaxCompletionTokens)
	}
}

// nodesMaxTokens is the largest max_tokens the lab's nodes take:
// nodes.max_tokens, or the fake model's default bound when it is absent
// (or out of range, which normalizeNodes reports).
func (e *Experiment) nodesMaxTokens() int {
	if m := e.Nodes.MaxTokens; m > 0 && fakemodel.CheckMaxTokensBound(m) == nil {
		return m
	}
	return fakemodel.MaxCompletionTokens
}

// normalizeGateway: the gateway tier's size, defenses and pod limits.
func (e *Experiment) normalizeGateway(p *problems) {
	g := &e.Gateway
	if g.Count == 0 {
		g.Count = 1
	}
	if g.Count < 1 || g.Count > 16 {
		p.add("gateway.count", "%d: want 1..16", g.Count)
	}
	for _, name := range sortedKeys(g.Defenses) {
		if !contains(Defenses, name) {
			p.add("gateway.defenses."+name, "unknown defense (known: %s)", strings.Join(Defenses, ", "))
		}
	}
	if g.MemoryLimitMB == 0 {
		g.MemoryLimitMB = DefaultMemoryLimitMB
	}
	if math.IsNaN(g.MemoryLimitMB) || (g.MemoryLimitMB > 0 && g.MemoryLimitMB < 16) {
		p.add("gateway.memory_limit_mb", "%v: want ≥ 16, or negative for no limit", g.MemoryLimitMB)
	}
	if g.RestartDelay == 0 {
		g.RestartDelay = Duration(DefaultRestartDelay)
	}
	if g.RestartDelay == Forever {
		p.add("gateway.restart_delay", "forever is only for the experiment's duration")
	}
}

// validateFaults checks each step against the chaos catalogue, the lab's
// shape (nodes.count, the Redis cluster's masters: a step naming node 7 of
// 3 is refused here, not when it is due) and the run's length. A bad
// parameter is reported at faults.N.params.NAME.
func (e *Experiment) validateFaults(p *problems) {
	topo := e.topology()
	for i, f := range e.Faults {
		path := fmt.Sprintf("faults.%d", i)
		var pe *chaos.ParamError
		if f.Fault == "" {
			p.add(path+".fault", "required")
		} else if err := validateFaultName(f.Fault); err != nil {
			p.add(path+".fault", "%v", err)
		} else if err := validateFaultStep(f, topo); errors.As(err, &pe) {
			p.add(path+".params."+pe.Field, "%s", pe.Msg)
		} else if err != nil {
			p.add(path+".params", "%v", err)
		} else if f.At != Forever && f.For != Forever {
			e.foldOwnFor(p, i)
		}
		// An unknown redis kind is reported at redis already.
		if need := chaos.Default.LabRedis(f.Fault); need != chaos.RedisNeedNone && contains(RedisKinds, e.Redis.Kind) {
			if msg := e.noLabRedis(need); msg != "" {
				p.addStep(path, f.Fault, "%s", msg)
			}
		}
		if f.At == Forever || f.For == Forever {
			p.add(path, "forever is only for the experiment's duration")
		}
		if e.Duration != Forever && f.At.D() > e.Duration.D() {
			p.add(path+".at", "%s is after the end of the run (%s)", f.At, e.Duration)
		}
	}
}

// noLabRedis says why a Redis fault step that needs a Redis of the shape
// need cannot act on e's Redis (one the lab does not run, or of the other
// shape) and what to do about it; "" when it can.
func (e *Experiment) noLabRedis(need chaos.RedisNeed) string {
	kinds := "auto (or server, embedded)"
	if need == chaos.RedisNeedCluster {
		kinds = "cluster"
	}
	switch {
	case e.Redis.Kind == RedisExternal:
		return "the experiment's redis is external: the lab does not run it and cannot stop it; let the lab run one (redis: " + kinds + ") or drop the step"
	case !e.Redis.LabRuns():
		return "the experiment has no redis: add redis: " + kinds + " or drop the step"
	case need == chaos.RedisNeedCluster && e.Redis.Kind != RedisCluster:
		return "it kills a master of a Redis Cluster, and the experiment's redis is one server (" + e.Redis.Kind + "): use redis: cluster, or redis_outage"
	case need == chaos.RedisNeedSingle && e.Redis.Kind == RedisCluster:
		return "it stops one Redis server, and the experiment's redis is a cluster: use redis_master_kill, or redis: " + kinds
	}
	return ""
}

// validateNarration checks the steps' kinds, texts, order and times (none
// after the end of the run: it would never show).
func (e *Experiment) validateNarration(p *problems) {
	for i, s := range e.Narration {
		path := fmt.Sprintf("narration.%d", i)
		switch s.Kind {
		case NarrationPredict, NarrationWatch, NarrationExplain:
		default:
			p.add(path+".kind", "%q: want %s, %s or %s", s.Kind, NarrationPredict, NarrationWatch, NarrationExplain)
		}
		if strings.TrimSpace(s.Text) == "" {
			p.add(path+".text", "required")
		}
		if s.At == Forever {
			p.add(path+".at", "forever is only for the experiment's duration")
		} else if e.Duration != Forever && s.At.D() > e.Duration.D() {
			p.add(path+".at", "%s is after the end of the run (%s): the step would never show", s.At, e.Duration)
		}
		if i > 0 && s.At < e.Narration[i-1].At {
			p.add(path+".at", "%s is before the previous step (%s): keep steps in order", s.At, e.Narration[i-1].At)
		}
		e.validatePredict(p, i)
	}
}

func (e *Experiment) validateThresholds(p *problems) {
	for _, name := range sortedKeys(e.Thresholds) {
		if _, err := ParseThreshold(name, e.Thresholds[name]); err != nil {
			p.add("thresholds."+name, "%v", err)
		}
	}
}

// validateGatewayConfig checks that the gateway config this experiment
// makes parses, naming the experiment field that most likely broke it.
func (e *Experiment) validateGatewayConfig(p *problems) {
	_, _, err := e.GatewayConfig(GatewayParams{
		Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Token: "check-token-0123456789",
		Nodes: []string{"127.0.0.1:1"}, Keys: APIKeys("check"),
		Defenses: e.Gateway.Defenses, Gateways: e.Gateway.Count,
	})
	if err != nil {
		p.add(gatewayErrPath(err), "%v", err)
	}
}

func (e *Experiment) normalizeMix(p *problems) {
	m := &e.Mix
	if len(m.Priorities) == 0 {
		m.Priorities = DefaultPriorityMix()
	}
	total := 0.0
	for _, k := range sortedKeys(m.Priorities) {
		v := m.Priorities[k]
		if !contains(priorities(), k) {
			p.add("mix.priorities."+k, "unknown priority (want %s)", strings.Join(priorities(), ", "))
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			p.add("mix.priorities."+k, "%v: want a weight ≥ 0", v)
		}
		total += v
	}
	if total <= 0 {
		p.add("mix.priorities", "weights sum to 0")
	}
	if len(m.Routes) == 0 {
		m.Routes = map[string]float64{DefaultRoute: 1}
	}
	checkRoutes(p, "mix.routes", m.Routes)
	for _, pr := range sortedKeys(m.RoutesByPriority) {
		if !contains(priorities(), pr) {
			p.add("mix.routes_by_priority."+pr, "unknown priority (want %s)", strings.Join(priorities(), ", "))
			continue
		}
		checkRoutes(p, "mix.routes_by_priority."+pr, m.RoutesByPriority[pr])
	}
	if m.PromptTokens == (IntRange{}) {
		m.PromptTokens = IntRange{Min: 100, Max: 400}
	}
	if m.PromptTokens.Min < 1 || m.PromptTokens.Max < m.PromptTokens.Min || m.PromptTokens.Max > 1_000_000 {
		p.add("mix.prompt_tokens", "%d..%d: want 1 ≤ min ≤ max ≤ 1000000", m.PromptTokens.Min, m.PromptTokens.Max)
	}
	if m.MaxTokens == 0 {
		m.MaxTokens = 64
	}
	if m.MaxTokens < 1 || m.MaxTokens > 1_000_000 {
		p.add("mix.max_tokens", "%d: want 1..1000000", m.MaxTokens)
	} else if bound := e.nodesMaxTokens(); m.MaxTokens > bound {
		// The nodes (and the gateway generated for them) refuse such a call
		// with a 400: the run would be every model call an error.
		p.add("mix.max_tokens", "%d: over the nodes' bound of %d (nodes.max_tokens): every model call would be refused", m.MaxTokens, bound)
	}
	if st := m.AgentSteps; st != (IntRange{}) && (st.Min < 1 || st.Max < st.Min || st.Max > load.MaxAgentSteps) {
		p.add("mix.agent_steps", "%d..%d: want 1 ≤ min ≤ max ≤ %d", st.Min, st.Max, load.MaxAgentSteps)
	}
}

// checkRoutes checks one route table's names and weights.
func checkRoutes(p *problems, path string, routes map[string]float64) {
	total := 0.0
	for _, k := range sortedKeys(routes) {
		v := routes[k]
		if !contains(Routes, k) {
			p.add(path+"."+k, "unknown route (known: %s)", strings.Join(Routes, ", "))
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			p.add(path+"."+k, "%v: want a weight ≥ 0", v)
		}
		total += v
	}
	if total <= 0 {
		p.add(path, "weights sum to 0")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
