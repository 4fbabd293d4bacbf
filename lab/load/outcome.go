package load

import "github.com/levee-lab/levee/internal/wire"

// Outcomes lists every outcome name in report order: the keys of
// Window.Outcomes and Totals.Outcomes (wire.Outcome's names). Priorities
// are the priority names, most important first. Do not modify either.
var (
	Outcomes   = outcomeNames()
	Priorities = priorityNames()
)

func outcomeNames() []string {
	var out []string
	for _, o := range wire.Outcomes() {
		out = append(out, o.String())
	}
	return out
}

func priorityNames() []string {
	p := wire.Priorities()
	return p[:]
}

// serverOutcome maps a gateway X-Levee-Outcome header value to an outcome.
// generator_dropped is not a value a server may send.
func serverOutcome(name string) (wire.Outcome, bool) {
	o, ok := wire.ParseOutcome(name)
	return o, ok && o.FromServer()
}

// priority is an index into Priorities.
type priority int

func priorityIndex(name string) (priority, bool) {
	i, ok := wire.PriorityIndex(name)
	return priority(i), ok
}
