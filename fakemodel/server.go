package fakemodel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// Listen binds n listeners on host. With port 0 each gets a free port; with
// port P they get P, P+1, …, P+n−1. On error every listener bound so far is
// closed.
func Listen(host string, port, n int) ([]net.Listener, error) {
	if n < 1 || n > 65535 {
		// Each node is a port of its own on host: more cannot listen.
		return nil, fmt.Errorf("fakemodel: nodes must be in [1, 65535], got %d", n)
	}
	if port < 0 || port > 65535 || (port > 0 && port+n-1 > 65535) {
		return nil, fmt.Errorf("fakemodel: port %d with %d nodes is out of range", port, n)
	}
	lns := make([]net.Listener, 0, n)
	for i := range n {
		p := 0
		if port > 0 {
			p = port + i
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("fakemodel: node %d: %w", i, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// Server runs several nodes in one process, all with the same options.
type Server struct {
	nodes []*Node
}

// NewServer makes one node per listener. On error the listeners are closed.
func NewServer(lns []net.Listener, opts ...Option) (*Server, error) {
	s := &Server{}
	for _, ln := range lns {
		n, err := NewNode(ln, opts...)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			for _, made := range s.nodes {
				made.Close()
			}
			return nil, err
		}
		s.nodes = append(s.nodes, n)
	}
	return s, nil
}

// Nodes returns the nodes in listener order.
func (s *Server) Nodes() []*Node { return s.nodes }

// Ready returns the process's ready line (docs/CONTRACTS.md): its nodes,
// the first as the listen and admin address.
func (s *Server) Ready() wire.Ready {
	r := wire.Ready{Kind: wire.KindFakeModel, PID: os.Getpid()}
	for _, n := range s.nodes {
		r.Nodes = append(r.Nodes, n.Addr())
	}
	if len(r.Nodes) > 0 {
		r.Listen, r.Admin = r.Nodes[0], r.Nodes[0]
	}
	return r
}

// ReadyLine returns the one-line JSON readiness object, without newline.
func (s *Server) ReadyLine() []byte { return s.Ready().Line() }

// Run serves every node until ctx is done (then drains for at most drain
// and returns nil when the drain finished) or until a node fails to serve
// (then it closes the others and returns that error).
func (s *Server) Run(ctx context.Context, drain time.Duration) error {
	errc := make(chan error, len(s.nodes))
	for _, n := range s.nodes {
		go func() { errc <- n.Serve() }()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		for _, n := range s.nodes {
			n.Close()
		}
		if err == nil {
			err = errors.New("fakemodel: a node stopped serving")
		}
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(s.nodes))
	for i, n := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.Shutdown(sctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
