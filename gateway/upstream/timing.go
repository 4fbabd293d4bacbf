package upstream

import "time"

// timing returns an attempt's timeout and hedge delay on n for class (0:
// none), from the latencies observed (see AttemptTimeoutConfig and
// HedgeConfig). A retry or a hedge goes to another node, so the time it
// needs, and the speed a slow node is hedged at, are its peers'.
func (p *Pool) timing(n *node, class string, remaining time.Duration, hasDeadline bool) (timeout, hedgeDelay time.Duration) {
	now := p.clock.Now()
	var own, peers latencyHist
	for _, m := range p.nodes {
		if m == n {
			m.stats.latency(now, class, &own)
		} else {
			m.stats.latency(now, class, &peers)
		}
	}
	at, hc := p.cfg.AttemptTimeout, p.cfg.Hedge
	enough := uint32(at.MinSamples)
	peersKnown := peers.count >= enough
	q := func(q float64) (time.Duration, bool) {
		if own.count >= enough {
			return own.quantile(q)
		}
		if peersKnown {
			return peers.quantile(q)
		}
		return 0, false
	}
	if !at.Disabled {
		if d, ok := q(at.Quantile); ok {
			timeout = max(at.Min, time.Duration(at.Multiplier*float64(d)))
			if hasDeadline && peersKnown {
				// Leave a retry its peers' quantile latency, while this
				// attempt keeps at least its node's median.
				need, _ := peers.quantile(at.Quantile)
				median, _ := q(0.5)
				if room := remaining - need; room >= median && room < timeout {
					timeout = max(room, at.Min)
				}
			}
			if hasDeadline && timeout >= remaining {
				timeout = 0
			}
		}
	}
	if !hc.Disabled {
		d, ok := q(hc.Quantile)
		if ok && peersKnown {
			pd, _ := peers.quantile(hc.Quantile)
			d = min(d, pd)
		}
		if ok && (!hasDeadline || d < remaining) {
			hedgeDelay = d
		}
	}
	return timeout, hedgeDelay
}
