package experiment

import (
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

// DefaultExperiment is the live lab the dashboard starts with: three nodes
// of 16 slots at p50 200 ms (capacity ≈ 200 req/s), one gateway with every
// defense on and an adaptive limit, and a moderate overload (2×) that runs
// until stopped.
func DefaultExperiment() *Experiment {
	e := &Experiment{
		Name:        "lab",
		Title:       "Levee lab",
		Description: "Three model nodes behind one gateway with every defense on, offered twice their capacity. Toggle faults and defenses and watch.",
		Duration:    Forever,
		StartRate:   50,
		Stages:      []Stage{{Duration: Duration(10 * time.Second), Target: 400}},
		Arrival:     load.ArrivalPoisson,
		Mix: MixSpec{
			Priorities: DefaultPriorityMix(),
			Routes:     map[string]float64{wire.RoutePredict: 0.8, wire.RouteChat: 0.1, wire.RouteChatStream: 0.1},
			// P0 is the trade/settle decision (seed 003): short calls that a
			// retry can save when a node dies, unlike a half-sent stream.
			RoutesByPriority: map[string]map[string]float64{wire.PriorityP0: {wire.RoutePredict: 1}},
			PromptTokens:     IntRange{Min: 100, Max: 400},
			MaxTokens:        64,
		},
		ClientTimeout: Duration(2 * time.Second),
		Nodes:         NodesSpec{Count: 3, Knobs: defaultNodeKnobs()},
		Gateway: GatewaySpec{
			Count: 1,
			// Every defense on but the rate limit.
			Defenses: func() map[string]bool {
				d := wire.AllDefenses(true)
				d.RateLimit = false
				return d.Map()
			}(),
			Limits: map[string]any{"classes": map[string]any{wire.ClassAI: map[string]any{
				"algorithm": "gradient", "limit": 48, "min": 8, "max": 128, "queue_size": 64, "queue_timeout_ms": 500,
			}}},
		},
		Narration: []Step{
			{At: 0, Kind: NarrationWatch, Text: "Offered load ramps to twice the nodes' capacity. Watch goodput hold at capacity while P2 is shed first."},
		},
	}
	if err := e.Normalize(); err != nil {
		panic("lab: default experiment is invalid: " + err.Error())
	}
	return e
}

// defaultNodeKnobs: 16 slots, lognormal p50 200 ms / p99 600 ms, an
// unbounded FIFO queue beyond the slots (an overloaded server), and work
// continued for clients that left (wasted, as real inference servers do).
func defaultNodeKnobs() map[string]any {
	return map[string]any{
		wire.KnobSlots:             16,
		wire.KnobOverflow:          wire.OverflowQueue,
		wire.KnobLatency:           map[string]any{wire.KnobDist: wire.DistLognormal, wire.KnobP50Ms: 200, wire.KnobP99Ms: 600},
		wire.KnobAbortOnDisconnect: false,
	}
}
