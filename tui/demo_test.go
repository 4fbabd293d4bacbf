package tui

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// TestDemo shows the dashboard over the fake lab on this terminal, looping
// the fixed Samples at 4 Hz, for looking at it by eye:
//
//	go test -c -o /tmp/tui.test ./tui && LEVEE_TUI_DEMO=1 /tmp/tui.test -test.run TestDemo
//
// It is skipped unless LEVEE_TUI_DEMO=1.
func TestDemo(t *testing.T) {
	if os.Getenv("LEVEE_TUI_DEMO") != "1" {
		t.Skip("set LEVEE_TUI_DEMO=1 and run the test binary in a terminal")
	}
	lipgloss.SetColorProfile(termenv.EnvColorProfile())
	f := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		samples := fixedSamples()
		for i := 0; ; i++ {
			s := samples[i%len(samples)]
			s.Elapsed = float64(i) * 0.25
			select {
			case f.ch <- s:
			case <-ctx.Done():
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	if err := Run(ctx, f, os.Stdin, os.Stdout); err != nil {
		t.Fatal(err)
	}
}
