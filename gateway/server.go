package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/httpbody"
	"github.com/levee-lab/levee/internal/wire"
)

// Server runs a Gateway on its traffic and admin listeners.
type Server struct {
	G       *Gateway
	traffic *http.Server
	admin   *http.Server
	tl, al  net.Listener
	errc    chan error

	shutOnce sync.Once
	shutErr  error
}

// Start builds the gateway from cfg, binds cfg.Listen and cfg.Admin, starts
// the gateway's loops and serves both listeners. The admin API requires
// adminToken (at least wire.MinAdminTokenLen characters, none of them a
// control character or whitespace at its edges, which no header carries). A request body
// must arrive within cfg.ReadHeaderTimeout unless its handler reads it
// (then the request's deadline bounds it), so a slow body a handler never
// reads cannot hold a connection (internal/httpbody). Stop it with
// Shutdown.
func Start(ctx context.Context, cfg Config, adminToken string, opts ...Option) (*Server, error) {
	if len(adminToken) < wire.MinAdminTokenLen {
		return nil, fmt.Errorf("gateway: the admin token must be at least %d characters (got %d)", wire.MinAdminTokenLen, len(adminToken))
	}
	if msg := wire.KeyProblem(adminToken); msg != "" {
		return nil, fmt.Errorf("gateway: the admin token has %s: no request could carry it", msg)
	}
	g, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	tl, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		g.Close()
		return nil, fmt.Errorf("gateway: listen: %w", err)
	}
	al, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		tl.Close()
		g.Close()
		return nil, fmt.Errorf("gateway: admin: %w", err)
	}
	errLog := slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)
	s := &Server{
		G: g, tl: tl, al: al, errc: make(chan error, 2),
		traffic: &http.Server{
			Handler:           httpbody.Deadline(g.Handler(), cfg.ReadHeaderTimeout),
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			MaxHeaderBytes:    cfg.MaxHeaderBytes,
			IdleTimeout:       cfg.IdleTimeout,
			ErrorLog:          errLog,
		},
		admin: &http.Server{
			Handler:           httpbody.Deadline(g.AdminHandler(adminToken), cfg.ReadHeaderTimeout),
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			MaxHeaderBytes:    cfg.MaxHeaderBytes,
			IdleTimeout:       cfg.IdleTimeout,
			ErrorLog:          errLog,
		},
	}
	if !loopbackAddr(al.Addr().String()) {
		g.log.Warn("gateway: the admin API listens beyond loopback (admin_allow_remote); only its bearer token guards it", "admin", al.Addr().String())
	}
	g.Run(ctx)
	for _, p := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{s.traffic, tl}, {s.admin, al}} {
		go func() {
			if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errc <- err
			}
		}()
	}
	return s, nil
}

// Addr is the bound traffic address; AdminAddr the admin one.
func (s *Server) Addr() string      { return s.tl.Addr().String() }
func (s *Server) AdminAddr() string { return s.al.Addr().String() }

// Err delivers a listener's fatal serve error.
func (s *Server) Err() <-chan error { return s.errc }

// Shutdown drains: /readyz turns 503; for drain_delay (or until ctx ends)
// the listeners still accept and serve, so a load balancer polling /readyz
// sees the 503 and stops sending; then the listeners stop accepting, and
// in-flight requests finish until ctx ends; then remaining connections are
// closed (their requests end as timeouts or errors) and the gateway stops.
// It returns ctx's error when the drain did not finish in time.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() {
		s.G.SetDraining(true)
		if d := s.G.cfg.DrainDelay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		var wg sync.WaitGroup
		var terr error
		wg.Go(func() { _ = s.admin.Shutdown(ctx) })
		wg.Go(func() { terr = s.traffic.Shutdown(ctx) })
		wg.Wait()
		if terr != nil {
			_ = s.traffic.Close()
			_ = s.admin.Close()
			s.shutErr = fmt.Errorf("gateway: drain: %w", terr)
		}
		s.G.Close()
	})
	return s.shutErr
}
