package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Run performs active health checks until ctx ends or Close is called: every
// HealthInterval each node gets GET HealthPath (timeout HealthTimeout). One
// 200 marks it up. A refused connection marks it down at once (nothing
// listens: the process is gone); other failures (timeout, bad status) mark it
// down only after UnhealthyThreshold in a row, so a scheduling stall on a
// saturated machine does not take healthy nodes out. The first round runs at
// once. Run returns after its in-flight checks have finished.
func (p *Pool) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(p.cfg.HealthInterval)
	defer t.Stop()
	for {
		p.checkAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkAll probes every node concurrently and waits for all.
func (p *Pool) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range p.nodes {
		wg.Go(func() {
			res := p.check(ctx, n)
			if ctx.Err() != nil {
				return // shutting down: the result means nothing
			}
			up := true
			switch res {
			case checkOK:
				n.healthFails = 0
			case checkRefused:
				n.healthFails = p.cfg.UnhealthyThreshold
				up = false
			default:
				n.healthFails++
				up = n.healthFails < p.cfg.UnhealthyThreshold && n.up.Load()
			}
			if was := n.up.Swap(up); was != up {
				p.log.Info("upstream health", "node", n.addr, "up", up)
				p.noteRotation()
			}
		})
	}
	wg.Wait()
}

type checkResult int

const (
	checkOK      checkResult = iota
	checkFailed              // timeout, reset or a status other than 200
	checkRefused             // connection refused: nothing listens
)

func (p *Pool) check(ctx context.Context, n *node) checkResult {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.addr+p.cfg.HealthPath, nil)
	if err != nil {
		return checkFailed
	}
	p.setHeaders(req)
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return checkRefused
		}
		return checkFailed
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return checkFailed
	}
	return checkOK
}
