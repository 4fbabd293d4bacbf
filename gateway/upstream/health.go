package upstream

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
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
			res, why := p.check(ctx, n)
			if ctx.Err() != nil {
				return // shutting down: the result means nothing
			}
			up := true
			switch res {
			case checkOK:
				n.healthFails = 0
				n.healthErr.Store(nil)
			case checkRefused:
				n.healthFails = p.cfg.UnhealthyThreshold
				up = false
			default:
				n.healthFails++
				up = n.healthFails < p.cfg.UnhealthyThreshold && n.up.Load()
			}
			if res != checkOK {
				n.healthErr.Store(&why)
			}
			if was := n.up.Swap(up); was != up {
				if up {
					p.log.Info("upstream health", "node", n.addr, "up", up)
				} else {
					p.log.Info("upstream health", "node", n.addr, "up", up, "reason", why)
				}
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

// check probes n once. A failure comes with its reason for the
// operator: the status or the transport's error, and what usually
// causes it (a health path the backend lacks, a key it wants, a
// certificate no system CA signed).
func (p *Pool) check(ctx context.Context, n *node) (checkResult, string) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.addr+p.cfg.HealthPath, nil)
	if err != nil {
		return checkFailed, fmt.Sprintf("building GET %s: %v", p.cfg.HealthPath, err)
	}
	p.setHeaders(req)
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return checkRefused, fmt.Sprintf("GET %s: connection refused (nothing listens)", p.cfg.HealthPath)
		}
		return checkFailed, fmt.Sprintf("GET %s: %v%s", p.cfg.HealthPath, err, transportHint(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return checkFailed, fmt.Sprintf("GET %s answered %s, not 200 OK%s", p.cfg.HealthPath, resp.Status, statusHint(resp.StatusCode))
	}
	return checkOK, ""
}

// statusHint says what a health check's status usually means.
func statusHint(code int) string {
	switch code {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return " (set upstream.health_path to the backend's: vLLM /health, llama.cpp server /health, OpenAI and Ollama /v1/models)"
	case http.StatusUnauthorized, http.StatusForbidden:
		return " (the backend wants a key: set it in upstream.headers, e.g. Authorization: \"Bearer ${API_KEY}\")"
	}
	return ""
}

// transportHint says what a health check's transport error usually means.
func transportHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		return " (a private CA or a self-signed certificate: point the SSL_CERT_FILE environment variable at its PEM file)"
	case errors.As(err, &invalid), errors.As(err, &hostname):
		return " (the backend's certificate does not fit the node URL)"
	case errors.Is(err, context.DeadlineExceeded):
		return " (upstream.health_timeout)"
	}
	return ""
}
