package upstream

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Run performs active health checks until ctx ends or Close is called: every
// HealthInterval each node gets GET HealthPath (timeout one interval); 200
// marks it up, anything else (or no answer) marks it down. The first round
// runs at once. Run returns after its in-flight checks have finished.
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
			up := p.check(ctx, n)
			if ctx.Err() != nil {
				return // shutting down: the result means nothing
			}
			if was := n.up.Swap(up); was != up {
				p.log.Info("upstream health", "node", n.addr, "up", up)
			}
		})
	}
	wg.Wait()
}

func (p *Pool) check(ctx context.Context, n *node) bool {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthInterval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.addr+p.cfg.HealthPath, nil)
	if err != nil {
		return false
	}
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
