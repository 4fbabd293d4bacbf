package runfiles

import (
	"math"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

// AgentSample is one tick's view of the agent tasks (seed 004).
type AgentSample struct {
	// Level is the level tasks are planned at now (the worst gateway's
	// levee_agent_level): "" when no gateway reported one.
	Level string `json:"level,omitempty"`
	// OfferedTotal and AnsweredTotal are client side, since the start:
	// agent requests offered, and those answered ok or fallback (a task
	// answered in time, degraded or not).
	OfferedTotal  uint64 `json:"offered_total"`
	AnsweredTotal uint64 `json:"answered_total"`
	// SuccessRate is answered / finished over the last few seconds (client
	// side); 1 when none finished.
	SuccessRate float64 `json:"success_rate"`
	// SuccessFinished is SuccessRate's denominator: tasks finished over
	// those seconds (0: none, see PrioritySample.SuccessFinished).
	SuccessFinished uint64 `json:"success_finished,omitempty"`
	// TasksByLevel and TasksByResult are gateway side: tasks counted in
	// levee_agent_tasks_total since the previous scrape, by the level they
	// were planned at and by result.
	TasksByLevel  map[string]float64 `json:"tasks_by_level,omitempty"`
	TasksByResult map[string]float64 `json:"tasks_by_result,omitempty"`
}

// AgentSummary is the agent tasks of a run.
type AgentSummary struct {
	// Offered and Answered are client side: agent requests offered, and
	// those answered ok or fallback within the client timeout.
	Offered  uint64 `json:"offered"`
	Answered uint64 `json:"answered"`
	// SuccessRate is Answered / Offered (1 when none was offered).
	SuccessRate float64 `json:"success_rate"`
	// ByLevel and ByResult are the gateways' task counts over the run: by
	// the agent level a task was planned at, and by its result.
	ByLevel  map[string]uint64 `json:"by_level"`
	ByResult map[string]uint64 `json:"by_result"`
	// MaxLevel is the highest agent level seen in any sample.
	MaxLevel string `json:"max_level"`
	// LevelsReached counts the levels at which tasks were planned.
	LevelsReached int `json:"levels_reached"`
}

// agentAgg accumulates the agent samples of a recording.
type agentAgg struct {
	byLevel, byResult map[string]float64
	maxLevel          int
}

func (g *agentAgg) add(a *AgentSample) {
	if a == nil {
		return
	}
	if g.byLevel == nil {
		g.byLevel, g.byResult, g.maxLevel = map[string]float64{}, map[string]float64{}, -1
	}
	for k, v := range a.TasksByLevel {
		g.byLevel[k] += v
	}
	for k, v := range a.TasksByResult {
		g.byResult[k] += v
	}
	if i, ok := wire.LevelIndex(a.Level); ok && i > g.maxLevel {
		g.maxLevel = i
	}
}

// summary is the run's AgentSummary (nil when no agent task was offered).
func (g *agentAgg) summary(t load.Totals) *AgentSummary {
	rt := t.ByRoute[string(load.RouteAgent)]
	if rt.Offered == 0 && g.byLevel == nil {
		return nil
	}
	s := &AgentSummary{Offered: rt.Offered, SuccessRate: 1, ByLevel: map[string]uint64{}, ByResult: map[string]uint64{}}
	s.Answered = rt.Outcomes[wire.OutcomeOK.String()] + rt.Outcomes[wire.OutcomeFallback.String()]
	if s.Offered > 0 {
		s.SuccessRate = round(float64(s.Answered)/float64(s.Offered), 6)
	}
	for _, l := range wire.Levels() {
		n := uint64(math.Round(g.byLevel[l]))
		s.ByLevel[l] = n
		if n > 0 {
			s.LevelsReached++
		}
	}
	for _, r := range wire.AgentTaskResults() {
		s.ByResult[r] = uint64(math.Round(g.byResult[r]))
	}
	s.MaxLevel = wire.LevelName(g.maxLevel)
	return s
}

// agentMetric is the value of an agent threshold metric.
func (s *Summary) agentMetric(name string) (float64, string) {
	if s.Agent == nil {
		return math.NaN(), "no agent tasks in this run"
	}
	switch name {
	case "agent_task_success_rate":
		return s.Agent.SuccessRate, ""
	case "agent_max_level":
		i, ok := wire.LevelIndex(s.Agent.MaxLevel)
		if !ok {
			return math.NaN(), "no gateway reported an agent level"
		}
		return float64(i), ""
	case "agent_levels_reached":
		return float64(s.Agent.LevelsReached), ""
	}
	return math.NaN(), "unknown metric"
}
