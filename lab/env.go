package lab

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/supervisor"
)

// The Lab is the chaos.Env its faults act on: child processes and admin
// APIs through the supervisor, the rate through the schedule, slow
// clients through the generator, timers on the lab's clock.

// NodeCount is the number of fake model nodes.
func (l *Lab) NodeCount() int { return l.sup.NodeCount() }

// PatchNodeKnobs sends patch to node i's PUT /admin/knobs (every node for
// -1) and returns the knobs it replaced; a restarted node comes back with it.
func (l *Lab) PatchNodeKnobs(ctx context.Context, node int, patch map[string]any) (map[string]any, error) {
	return l.sup.PatchNodeKnobs(ctx, node, patch)
}

// KillNode SIGKILLs node i's process.
func (l *Lab) KillNode(ctx context.Context, node int) error { return l.sup.KillNode(ctx, node) }

// RestartNode starts node i again on the same port and waits until it is ready.
func (l *Lab) RestartNode(ctx context.Context, node int) error { return l.sup.RestartNode(ctx, node) }

// PatchGatewayPressure sends patch to every running gateway's PUT /admin/pressure.
func (l *Lab) PatchGatewayPressure(ctx context.Context, patch map[string]any) error {
	return l.sup.PatchGatewayPressure(ctx, patch)
}

// KillRedis kills the lab's Redis child.
func (l *Lab) KillRedis(ctx context.Context) error { return l.sup.KillRedis(ctx) }

// RestartRedis brings the Redis child back on its port.
func (l *Lab) RestartRedis(ctx context.Context) error { return l.sup.RestartRedis(ctx) }

// KillRedisMaster SIGKILLs one master of the lab's Redis Cluster (-1: the
// one holding the most keys) and returns its node index. A lab goroutine
// then waits for a replica to take its slots over and records the
// failover (an event and the summary's redis.failovers).
func (l *Lab) KillRedisMaster(ctx context.Context, master int) (int, error) {
	k, err := l.sup.KillRedisMaster(ctx, master)
	if err != nil {
		return -1, err
	}
	go l.watchFailover(k)
	return k.Node, nil
}

// failoverTimeout bounds the wait for a replica to take over a killed
// master: many times the cluster's node timeout.
const failoverTimeout = 30 * time.Second

// watchFailover waits for the failover of the master k killed and records
// it (or its absence).
func (l *Lab) watchFailover(k supervisor.RedisMasterKilled) {
	ctx, cancel := context.WithTimeout(l.ctx, failoverTimeout)
	defer cancel()
	_, by, err := l.sup.WaitRedisFailover(ctx, k.Node)
	f := runfiles.RedisFailover{Killed: k.Addr}
	if err != nil {
		if l.ctx.Err() != nil {
			return // the lab is finishing: nothing to say
		}
		f.Error = err.Error()
		l.event(runfiles.EventRedisFailover, fmt.Sprintf("master %s lost, no failover: %v", k.Addr, err), map[string]any{"killed": k.Addr, "error": err.Error()})
		l.progressErr("redis: master %s lost, no failover: %v", k.Addr, err)
	} else {
		after := time.Since(k.At)
		f.By, f.AfterS = by, round(after.Seconds(), 3)
		l.event(runfiles.EventRedisFailover, fmt.Sprintf("master %s → replica %s in %.1fs", k.Addr, by, after.Seconds()),
			map[string]any{"killed": k.Addr, "by": by, "after_s": f.AfterS})
		l.progress("redis: failover: master %s → replica %s in %.1fs", k.Addr, by, after.Seconds())
	}
	// The kill's time on the lab's clock: the failover's own duration is
	// measured on the wall clock the cluster runs on.
	at := l.clock.Now().Add(-time.Since(k.At))
	if c := l.recs.current(); c != nil && c.agg != nil {
		c.agg.RedisFailover(f, at)
	}
}

// RestartRedisNode starts a killed cluster node again (it rejoins as a
// replica) and waits until the cluster is healthy.
func (l *Lab) RestartRedisNode(ctx context.Context, node int) error {
	return l.sup.RestartRedisNode(ctx, node)
}

// SetRateFactor multiplies the target rate (1 = normal).
func (l *Lab) SetRateFactor(f float64) {
	if !(f > 0) || math.IsInf(f, 1) {
		f = 1
	}
	l.sched.mu.Lock()
	l.sched.rateFactor = f
	l.sched.mu.Unlock()
}

// SetSlowClients makes a share of stream and export readers slow.
func (l *Lab) SetSlowClients(share, kbps float64) {
	if err := l.gen.SetSlowClients(share, kbps); err != nil {
		l.progressErr("slow clients: %v", err)
	}
}

// After runs f after d of the lab's clock unless the lab stops first. A
// node killed within the last second shows d as its time to restart (the
// usual caller is node_kill's restart).
func (l *Lab) After(d time.Duration, f func()) {
	l.mu.Lock()
	if l.envDone {
		l.mu.Unlock()
		return
	}
	t := l.clock.AfterFunc(d, func() {
		l.mu.Lock()
		stopped := l.envDone
		l.mu.Unlock()
		if !stopped {
			f()
		}
	})
	l.timers = append(l.timers, t)
	l.mu.Unlock()
	l.sup.ShowRestart(time.Now().Add(-time.Second), d)
}

// stopEnv cancels every pending After.
func (l *Lab) stopEnv() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.envDone = true
	for _, t := range l.timers {
		t.Stop()
	}
	l.timers = nil
}
