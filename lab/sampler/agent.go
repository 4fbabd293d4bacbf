package sampler

import (
	"math"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/scrape"
)

// agentKey is the recent-success key of the agent tasks (beside the
// priorities).
const agentKey = "agent"

// addAgentClient starts the sample's agent view from the generator's
// window: nil when no agent task was ever offered.
func (st *State) addAgentClient(smp *runfiles.Sample, in Input) {
	aw := in.Window.ByRoute[string(load.RouteAgent)]
	if aw.OfferedTotal == 0 {
		return
	}
	rate, fin := st.recentRate(agentKey, prioCount{ok: aw.Answered, finished: aw.Finished}, in.Tick)
	smp.Agent = &runfiles.AgentSample{OfferedTotal: aw.OfferedTotal, AnsweredTotal: aw.AnsweredTotal, SuccessRate: round(rate, 6), SuccessFinished: fin}
}

// agentDeltas are one gateway's agent task counts since its previous
// scrape, by level and by result.
func agentDeltas(f, prev scrape.Families) (byLevel, byResult map[string]float64) {
	return f.ByLabelDelta(prev, wire.MetricAgentTasks, wire.LabelLevel, nil),
		f.ByLabelDelta(prev, wire.MetricAgentTasks, wire.LabelResult, nil)
}

// addAgentGateway adds one gateway's agent level (the worst counts) and,
// on a new scrape, its task counts to the sample's agent view.
func addAgentGateway(smp *runfiles.Sample, f scrape.Families, byLevel, byResult map[string]float64) {
	if smp.Agent == nil {
		return
	}
	a := smp.Agent
	if v, ok := f.Max(wire.MetricAgentLevel, nil); ok {
		if cur, had := wire.LevelIndex(a.Level); !had || int(v) > cur {
			a.Level = wire.LevelName(int(math.Round(v)))
		}
	}
	add := func(dst *map[string]float64, src map[string]float64) {
		for k, v := range src {
			if v <= 0 {
				continue
			}
			if *dst == nil {
				*dst = map[string]float64{}
			}
			(*dst)[k] += v
		}
	}
	add(&a.TasksByLevel, byLevel)
	add(&a.TasksByResult, byResult)
}
