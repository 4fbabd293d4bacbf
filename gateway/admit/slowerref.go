package admit

import "math"

// slowerProbe is an urgent probe below whose statistic a slower verdict
// made the baseline (see endProbe).
type slowerProbe struct {
	limit    int     // its limit; 0: none
	stat, se float64 // its statistic and standard error, seconds
}

// contradicted reports whether the next probe below, at limit lim with
// statistic s, ran deeper and read significantly faster: a slower backend
// is as slow at any concurrency below its capacity, so the faster reading
// says the probe before it met a queue (traced in lesson 04: an urgent
// probe at 35 over 32 live slots read 0.209 s against a baseline of 0.138
// s and was judged a slowdown; the next, at 31, read 0.145 s, just inside
// three standard errors, and was merged with it: the baseline of 0.170 s
// held the limit at the band's top edge for 20 s).
func (p slowerProbe) contradicted(lim int, s *windowStats) bool {
	return p.limit > 0 && lim < p.limit && s.n > 0 && s.stat < p.stat-congestionZ*math.Hypot(s.se, p.se)
}
