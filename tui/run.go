package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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
func Run(ctx context.Context, ctrl lab.Controls, in io.Reader, out io.Writer, opts ...Option) error {
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stopSignals()
	m := New(ctrl, opts...)
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
	var stopErr error
	if !fm.stopped {
		// fm.ctrl: the lab shown last (a lesson switch replaces ctrl).
		sctx, cancel := context.WithTimeout(context.Background(), fm.stopTimeout)
		stopErr = fm.ctrl.Stop(sctx)
		cancel()
	} else {
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
