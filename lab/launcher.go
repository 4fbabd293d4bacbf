package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/levee-lab/levee/lab/experiment"
)

// ErrLauncherClosed is returned by Launch after Close.
var ErrLauncherClosed = errors.New("lab: launcher closed")

// Launcher runs one lab at a time, for a dashboard whose lesson picker
// switches lessons: Launch stops the current lab — load, faults, the
// recording, every child process, its temporary folder — and only then
// opens the next one with the same Options. Safe for concurrent use; a
// switch holds the launcher until it is done. A Close or Kill during a
// switch does not wait for the new lab to open: it cancels the opening
// (the children started so far are SIGKILLed, process group and all, and
// its temporary folder removed), and the Launch returns ErrLauncherClosed.
type Launcher struct {
	opts Options

	mu     sync.Mutex // held for a whole Launch or Close
	cur    *Lab       // guarded by mu
	closed bool       // guarded by mu
	// live is cur for Kill, which must not wait for mu (a Close holds it
	// while its lab stops); killed: Kill was called; closing: Close was.
	live    atomic.Pointer[Lab]
	killed  atomic.Bool
	closing atomic.Bool
	// openMu guards opening, the Open in progress (nil when none), which
	// Close and Kill cancel without waiting for mu.
	openMu  sync.Mutex
	opening *opening
}

// opening is an Open in progress: cancel ends it, done is closed once it
// returned (and, failed, undid everything it started).
type opening struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// NewLauncher returns a Launcher that opens labs with opts.
func NewLauncher(opts Options) *Launcher { return &Launcher{opts: opts} }

// Launch stops the current lab, if any, and opens exp. It returns when
// every child of the new lab is ready. When the current lab does not stop
// within ctx the new one is not started (its children could not be said to
// be gone); when the new one fails to open, no lab runs and Current is nil.
func (s *Launcher) Launch(ctx context.Context, exp *experiment.Experiment) (*Lab, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.killed.Load() || s.closing.Load() {
		return nil, ErrLauncherClosed
	}
	if err := s.stopLocked(ctx); err != nil {
		return nil, err
	}
	l, err := s.open(ctx, exp)
	if err != nil {
		if s.killed.Load() || s.closing.Load() {
			return nil, fmt.Errorf("%w (it cancelled the lab opening: %v)", ErrLauncherClosed, err)
		}
		return nil, err
	}
	s.cur = l
	s.live.Store(l)
	if s.killed.Load() { // Kill came while it opened
		l.Kill()
		return nil, ErrLauncherClosed
	}
	return l, nil
}

// open opens exp under a context Close and Kill cancel (cancelOpening).
func (s *Launcher) open(ctx context.Context, exp *experiment.Experiment) (*Lab, error) {
	octx, cancel := context.WithCancel(ctx)
	o := &opening{cancel: cancel, done: make(chan struct{})}
	defer func() {
		s.openMu.Lock()
		s.opening = nil
		s.openMu.Unlock()
		cancel()
		close(o.done)
	}()
	s.openMu.Lock()
	s.opening = o
	s.openMu.Unlock()
	if s.killed.Load() || s.closing.Load() { // came before opening was set
		cancel()
	}
	return Open(octx, exp, s.opts)
}

// cancelOpening cancels the Open in progress, if any, and returns a
// channel closed once it returned (nil when none runs).
func (s *Launcher) cancelOpening() <-chan struct{} {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.opening == nil {
		return nil
	}
	s.opening.cancel()
	return s.opening.done
}

// Kill ends the current lab at once (Lab.Kill: every child SIGKILLed and
// reaped before it returns, a temporary work folder removed) without
// waiting for a Launch or Close in progress, and refuses further
// launches. A lab a Launch in progress is opening is cancelled: Kill
// returns once the opening has SIGKILLed the children it started and
// removed its temporary folder (a lab that finished opening meanwhile is
// killed as it opens). A Close waiting for the lab to stop returns soon
// after.
func (s *Launcher) Kill() {
	s.killed.Store(true)
	if done := s.cancelOpening(); done != nil {
		<-done
	}
	if l := s.live.Load(); l != nil {
		l.Kill()
	}
}

// stopLocked stops the current lab and waits until it is torn down. A
// recording it could not finish is reported by its Wait, not here: the
// switch goes on.
func (s *Launcher) stopLocked(ctx context.Context) error {
	if s.cur == nil {
		return nil
	}
	old := s.cur
	err := old.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("lab: %s did not stop in time: %w", old.exp.Name, err)
	}
	s.cur = nil
	s.live.Store(nil)
	return nil
}

// Current is the lab running now (nil before the first Launch, after a
// failed one and after Close).
func (s *Launcher) Current() *Lab {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Close stops the current lab and refuses further launches; a lab a
// Launch in progress is opening is cancelled, not waited for (see
// Launcher). It returns the stopped lab's Wait error (its recording), or
// ctx's error.
func (s *Launcher) Close(ctx context.Context) error {
	s.closing.Store(true)
	s.cancelOpening()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cur == nil {
		return nil
	}
	old := s.cur
	if err := s.stopLocked(ctx); err != nil {
		return err
	}
	return old.Wait()
}
