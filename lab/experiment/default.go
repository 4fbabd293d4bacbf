package experiment

import "time"

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
		Arrival:     "poisson",
		Mix: MixSpec{
			Priorities: map[string]float64{"P0": 0.1, "P1": 0.3, "P2": 0.6},
			Routes:     map[string]float64{"predict": 0.8, "chat": 0.1, "chat-stream": 0.1},
			// P0 is the trade/settle decision (seed 003): short calls that a
			// retry can save when a node dies, unlike a half-sent stream.
			RoutesByPriority: map[string]map[string]float64{"P0": {"predict": 1}},
			PromptTokens:     IntRange{Min: 100, Max: 400},
			MaxTokens:        64,
		},
		ClientTimeout: Duration(2 * time.Second),
		Nodes:         NodesSpec{Count: 3, Knobs: defaultNodeKnobs()},
		Gateway: GatewaySpec{
			Count:    1,
			Defenses: map[string]bool{"ratelimit": false, "guard": true, "bulkhead": true, "budget": true, "breaker": true, "retry": true, "fallback": true},
			Limits: map[string]any{"classes": map[string]any{"ai": map[string]any{
				"algorithm": "gradient", "limit": 48, "min": 8, "max": 128, "queue_size": 64, "queue_timeout_ms": 500,
			}}},
		},
		Narration: []Step{
			{At: 0, Kind: "watch", Text: "Offered load ramps to twice the nodes' capacity. Watch goodput hold at capacity while P2 is shed first."},
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
		"slots":               16,
		"overflow":            "queue",
		"latency":             map[string]any{"dist": "lognormal", "p50_ms": 200, "p99_ms": 600},
		"abort_on_disconnect": false,
	}
}
