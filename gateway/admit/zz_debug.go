package admit

import (
	"log"
	"math"
	"os"
)

func init() {
	if os.Getenv("LEVEE_DEBUG_LIMITER") == "" {
		return
	}
	debugWindow = func(a *adaptive, s *windowStats, before float64) {
		log.Printf("LIMWIN cap=%.1f n=%d infl=%.1f stat=%.4f se=%.4f base=%.4f bsd=%.4f x=%.1f Q=%.2f qse=%.2f tgt=%.2f rts=%d used=%v short=%.1f est %.1f -> %.1f",
			a.capEst, s.n, s.inflight, s.stat, s.se, a.base, math.Sqrt(a.baseVar), s.x, s.queue, s.queueSE, s.target, s.rts, s.used, a.short, before, a.est)
	}
	k := 0
	debugTick = func(a *adaptive) {
		k++
		if k%100 != 0 || a.ring.count == 0 {
			return
		}
		o := a.ring.oldest()
		log.Printf("LIMTICK ring %d oldest [%d,%d) kind %d got %d pend@%d tickets %d est %.1f lim %d probe %d cutEst %.3f", a.ring.count, o.from, o.to, o.kind, o.got, o.youngestPending(), a.tickets.Load(), a.est, a.Limit(), a.probe.phase, a.cutEst)
	}
	debugProbeStart = func(a *adaptive, lim int, up bool) {
		log.Printf("LIMPROBE lim %d up %v urgent %v est %.1f noise %.2f cap %.1f", lim, up, a.probe.urgent, a.est, math.Sqrt(a.noise), a.capEst)
	}
	debugProbe = func(a *adaptive, n int, stat, se float64) {
		log.Printf("LIMPROBEEND n %d stat %.4f se %.4f base %.4f", n, stat, se, a.base)
	}
	debugBase = func(a *adaptive, v, variance float64) {
		log.Printf("LIMBASE %.4f -> %.4f sd %.4f", a.base, v, math.Sqrt(variance))
	}
	debugStall = func(a *adaptive, gap float64) {
		log.Printf("LIMSTALL gap %.3f x %.1f", gap, a.x)
	}
	debugStart = func(a *adaptive, co *cohort) { log.Printf("LIMSTART size %d got %d", co.size(), co.got) }
}
