package upstream

import (
	"net"
	"net/http"
	"time"
)

// NewTransport returns the pool's tuned transport for cfg (defaults
// applied): many idle connections per node (keep-alive reuse instead of a
// new TCP connection per call), no cap on connections per node (the
// gateway's bulkhead is the cap), a short dial timeout so a dead node fails
// fast, idle connections closed after cfg.IdleConnTimeout, no transparent
// compression, and HTTP/1.1 only.
func NewTransport(cfg Config) *http.Transport {
	cfg = cfg.WithDefaults()
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          cfg.MaxIdleConnsPerHost * max(1, len(cfg.Nodes)),
		MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
		MaxConnsPerHost:       0,
		IdleConnTimeout:       cfg.IdleConnTimeout,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: 0,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}
