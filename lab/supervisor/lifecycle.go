package supervisor

import (
	"context"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
)

// childExited handles a process that ended without the supervisor asking:
// a gateway is restarted after the restart delay (a pod), a node stays down.
func (s *Supervisor) childExited(c *Child, err error) {
	if !s.watching() {
		return
	}
	s.event(runfiles.EventChildExit, c.name, map[string]any{"pid": c.PID(), "status": exitText(err)})
	s.progress("%s exited: %s", c.name, exitText(err))
	if c.kind == "gateway" {
		s.restartGatewayLater(c, "crash")
	}
}

// maxRestartBackoff caps the delay between failed restarts of a gateway
// (unless the restart delay itself is longer).
const maxRestartBackoff = time.Minute

// restartGatewayLater restarts c after the restart delay, on a goroutine.
// A restart that fails — the process exits before its ready line, or is
// not ready within the ready timeout — is tried again after twice the
// previous delay, up to maxRestartBackoff (a pod in CrashLoopBackOff): the
// gateway is never given up on after one hung start, and a start that
// cannot succeed (its port taken, a bad config) is not retried at the
// restart delay forever. Each failure is an error event saying when the
// next try is; RestartIn counts down to it.
func (s *Supervisor) restartGatewayLater(c *Child, why string) {
	go func() {
		d := s.cfg.RestartDelay
		for {
			c.setRestart(time.Now().Add(d))
			select {
			case <-time.After(d):
			case <-s.quiet:
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ReadyTimeout)
			err := c.Start(ctx)
			cancel()
			if err == nil {
				break
			}
			if !s.watching() {
				return
			}
			d = nextRestartDelay(d, s.cfg.RestartDelay)
			s.event(runfiles.EventError, c.name+": restart failed", map[string]any{"error": err.Error(), "retry_in_s": d.Seconds()})
			s.failure("%s: restart failed (next try in %s): %v", c.name, d, err)
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		s.event(runfiles.EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen(), "restart": why})
	}()
}

// nextRestartDelay is the delay after a failed restart that waited d:
// twice d (at least 100 ms), at most maxRestartBackoff or the restart
// delay when that is longer.
func nextRestartDelay(d, restartDelay time.Duration) time.Duration {
	return min(2*max(d, 50*time.Millisecond), max(maxRestartBackoff, restartDelay))
}

// memoryPoll is how often gateway RSS is read.
const memoryPoll = 100 * time.Millisecond

// watchMemory reads the gateway's VmRSS several times a second; at the
// pod limit it SIGKILLs it (an OOM kill), counts it and restarts it after
// the restart delay. A gateway that is down (crashed, killed, starting
// again) has no RSS: its reading is 0, not the last one of the process
// that ended.
func (s *Supervisor) watchMemory(c *Child) {
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for {
		select {
		case <-s.quiet:
			return
		case <-t.C:
		}
		rss, err := uint64(0), error(nil)
		if c.Up() {
			rss, err = readRSS(c.PID())
		}
		if err != nil {
			continue // a process ending between Up and the read
		}
		s.mu.Lock()
		s.gwRSS[c.index] = rss
		s.gwPeak[c.index] = max(s.gwPeak[c.index], rss)
		s.mu.Unlock()
		if limit := s.cfg.MemoryLimit; limit > 0 && rss >= limit && s.watching() {
			s.oomKill(c, rss, limit)
		}
	}
}

// oomKill kills gateway c at its memory limit and restarts it later.
func (s *Supervisor) oomKill(c *Child, rss, limit uint64) {
	// Counted and logged before the kill completes, so a kill racing the
	// end of a recording is in both its summary and its events.
	pid := c.PID()
	s.mu.Lock()
	s.oomKills++
	n := s.oomKills
	s.gwRSS[c.index] = 0
	s.mu.Unlock()
	s.event(runfiles.EventOOMKill, c.name, map[string]any{"pid": pid, "rss_bytes": rss, "limit_bytes": limit, "oom_kills": n})
	c.Kill()
	s.progress("%s OOM-killed at %.0f MB (limit %.0f MB)", c.name, float64(rss)/(1<<20), float64(limit)/(1<<20))
	s.restartGatewayLater(c, "oom")
}
