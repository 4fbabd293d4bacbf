package lab

import (
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/lab/experiment"
)

// referenceRules are the rules the generator runs as one exact limiter
// per priority (load.Config.Reference), so the summary judges the limit
// the gateways share against it: the experiment's global limits, none
// when clients retry (the gateways then decide on attempts).
func referenceRules(e *experiment.Experiment) map[string]ratelimit.Rule {
	if e.ClientRetry.Policy().Enabled() {
		return nil
	}
	limits := e.GlobalLimits()
	if len(limits) == 0 {
		return nil
	}
	out := make(map[string]ratelimit.Rule, len(limits))
	for p, l := range limits {
		out[p] = l.Exact
	}
	return out
}
