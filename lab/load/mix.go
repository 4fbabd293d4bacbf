package load

import (
	"math/rand/v2"
	"strings"
)

// spec is one drawn request: everything send needs, decided by the
// scheduler goroutine so that a seed fixes the whole schedule.
type spec struct {
	priority  priority
	route     Route
	target    string // base URL
	key       string // API key; "" sends no Authorization header
	tokens    int    // prompt tokens (export: rows)
	maxTokens int
	steps     int     // agent: tool-call steps asked for; 0 sends none
	slowBps   float64 // bytes per second for a slow reader; 0 reads at full speed
	amount    float64 // predict features
	ageDays   int
	txn24h    int
}

// routeTable draws a route: cumulative shares in AllRoutes order.
type routeTable struct {
	cum    []float64
	routes []Route
}

func newRouteTable(shares map[string]float64) routeTable {
	var t routeTable
	sum := 0.0
	for _, r := range AllRoutes {
		if s := shares[string(r)]; s > 0 {
			sum += s
			t.cum = append(t.cum, sum)
			t.routes = append(t.routes, r)
		}
	}
	return t
}

// mixer draws specs from a Mix. Used by the scheduler goroutine only.
type mixer struct {
	rng *rand.Rand

	prioCum []float64 // cumulative shares, in Priorities order
	prioIdx []priority
	routes  [3]routeTable // by priority
	keys    [3]string

	tokMin, tokMax   int
	maxTokens        int
	stepMin, stepMax int
	rr               uint64 // round-robin cursor over targets
}

func newMixer(m Mix, seed int64) *mixer {
	x := &mixer{
		rng:       rand.New(rand.NewPCG(uint64(seed), 0x6a09e667f3bcc909)),
		tokMin:    m.PromptTokens[0],
		tokMax:    m.PromptTokens[1],
		maxTokens: m.MaxTokens,
		stepMin:   m.AgentSteps[0],
		stepMax:   m.AgentSteps[1],
	}
	sum := 0.0
	for i, name := range Priorities {
		if s := m.Priorities[name]; s > 0 {
			sum += s
			x.prioCum = append(x.prioCum, sum)
			x.prioIdx = append(x.prioIdx, priority(i))
			x.keys[i] = m.Keys[name]
		}
	}
	for i, name := range Priorities {
		if routes, ok := m.RoutesByPriority[name]; ok {
			x.routes[i] = newRouteTable(routes)
		} else {
			x.routes[i] = newRouteTable(m.Routes)
		}
	}
	return x
}

func pick(rng *rand.Rand, cum []float64) int {
	u := rng.Float64() * cum[len(cum)-1]
	for i, c := range cum {
		if u < c {
			return i
		}
	}
	return len(cum) - 1
}

// next draws the next request. slowShare of stream (chat-stream,
// completions-stream) and export requests read at slowKBps.
func (x *mixer) next(targets []string, slowShare, slowKBps float64) spec {
	p := x.prioIdx[pick(x.rng, x.prioCum)]
	s := spec{
		priority:  p,
		route:     x.routes[p].routes[pick(x.rng, x.routes[p].cum)],
		target:    targets[x.rr%uint64(len(targets))],
		key:       x.keys[p],
		tokens:    x.tokMin,
		maxTokens: x.maxTokens,
	}
	x.rr++
	if x.tokMax > x.tokMin {
		s.tokens += x.rng.IntN(x.tokMax - x.tokMin + 1)
	}
	switch s.route {
	case RouteChatStream, RouteCompletionsStream, RouteExport:
		if slowShare > 0 && x.rng.Float64() < slowShare {
			s.slowBps = slowKBps * 1024
		}
	case RouteAgent:
		s.steps = x.stepMin
		if x.stepMax > x.stepMin {
			s.steps += x.rng.IntN(x.stepMax - x.stepMin + 1)
		}
	case RoutePredict:
		s.amount = float64(x.rng.IntN(500000)) / 100
		s.ageDays = x.rng.IntN(3650)
		s.txn24h = x.rng.IntN(40)
	}
	return s
}

// promptWord is one prompt token: 4 bytes, so a gateway estimating tokens as
// bytes/4 sees the intended count.
const promptWord = "tok "

func prompt(tokens int) string { return strings.Repeat(promptWord, tokens) }
