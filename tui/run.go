package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/lab"
)

// Run shows the dashboard over ctrl on the terminal in/out (full screen)
// until the user quits or ctx is cancelled. It returns only after
// ctrl.Stop has been called: by the q key, or by Run itself, bounded by the
// stop timeout, when the program ends any other way (ctx, a signal, an
// error). in and out must be a terminal; callers check that first.
//
// SIGINT, SIGTERM and SIGHUP (the terminal closed) end it like a
// cancelled ctx: the lab is stopped as on q, its recording finished and
// its work folder removed. Run watches them itself
// instead of Bubble Tea's signal handler, which sends its quit message
// without watching the program's context (bubbletea v1.3.10): when the
// same signal had cancelled ctx (a caller's signal.NotifyContext), the
// event loop was gone, the send blocked for ever and so did the program's
// shutdown — the lab was never stopped.
//
// A second interrupt while the lab stops — the quit key again, or a
// signal after a quit key or a first signal — kills the lab at once when
// WithKill is set, and Run returns ErrKilled without waiting for Stop.
func Run(ctx context.Context, ctrl lab.Controls, in io.Reader, out io.Writer, opts ...Option) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(ctrl, opts...)
	h := m.hurry
	// The first signal ends the dashboard (the lab is stopped below, as on
	// q); one that comes while the lab stops — after a quit key or an
	// earlier signal — is the second interrupt (WithKill).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		for {
			select {
			case <-sigs:
				h.interrupt()
				cancel()
			case <-watchDone:
				return
			}
		}
	}()
	if m.log != nil {
		m.log.setCapture(true)
	}
	p := tea.NewProgram(m,
		tea.WithContext(ctx),
		tea.WithInput(in),
		tea.WithOutput(out),
		tea.WithAltScreen(),
		tea.WithoutSignalHandler(),
	)
	final, runErr := p.Run()
	if m.log != nil {
		// The screen is the terminal's again: what the lab writes while it
		// stops below, and what the dashboard had no time to show, goes
		// to the log's writer.
		m.log.setCapture(false)
	}
	fm, _ := final.(*Model)
	if fm == nil {
		fm = m
	}
	if fm.log != nil {
		// The status line is one line: a long error (a failed revert's
		// chain of causes) was cut there, and gone once replaced.
		fm.log.writeShown(fm.shownErrs)
	}
	var stopErr error
	switch {
	case h.killedOrKilling():
		return ErrKilled
	case !fm.stopped:
		// fm.ctrl: the lab shown last (a lesson switch replaces ctrl).
		sctx, scancel := context.WithTimeout(context.Background(), fm.stopTimeout)
		stopped := make(chan error, 1)
		go func() { stopped <- fm.ctrl.Stop(sctx) }()
		select {
		case stopErr = <-stopped:
		case <-h.killed:
		}
		scancel()
		// The kill ends the stop too (its children are gone): a stop
		// that returned while the kill ran was ended by it.
		if h.killedOrKilling() {
			return ErrKilled
		}
	default:
		stopErr = fm.stopErr
	}
	if stopErr != nil {
		stopErr = fmt.Errorf("stopping the lab: %w", stopErr)
	}
	// Quitting, SIGINT/SIGTERM and a cancelled ctx are normal ends.
	normal := runErr == nil || errors.Is(runErr, tea.ErrInterrupted) ||
		(errors.Is(runErr, tea.ErrProgramKilled) && !errors.Is(runErr, tea.ErrProgramPanic) && ctx.Err() != nil)
	if !normal {
		return errors.Join(fmt.Errorf("dashboard: %w", runErr), stopErr)
	}
	return stopErr
}

// ErrKilled is what Run returns when a second interrupt came while the lab
// stopped and WithKill's kill ended it at once.
var ErrKilled = errors.New("second interrupt: every child process killed (SIGKILL) without waiting for the lab to stop")

// hurry counts interrupts (quit keys and signals) for WithKill: the first
// starts the lab's stop, the second while it stops calls kill once.
type hurry struct {
	kill     func() // nil: a second interrupt kills nothing
	mu       sync.Mutex
	count    int
	killOnce sync.Once
	killed   chan struct{} // closed once kill has returned
}

// interrupt counts one interrupt and kills on the second (with kill set).
func (h *hurry) interrupt() {
	h.mu.Lock()
	h.count++
	second := h.count >= 2
	h.mu.Unlock()
	if second && h.kill != nil {
		h.killOnce.Do(func() {
			h.kill()
			close(h.killed)
		})
	}
}

// killedOrKilling reports whether a second interrupt called kill; it
// waits for a kill under way to return.
func (h *hurry) killedOrKilling() bool {
	h.mu.Lock()
	second := h.count >= 2
	h.mu.Unlock()
	if !second || h.kill == nil {
		return false
	}
	<-h.killed
	return true
}
