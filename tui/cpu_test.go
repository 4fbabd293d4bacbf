package tui

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// BenchmarkProgramCPU runs the real Bubble Tea program (renderer included,
// output discarded, colours on) at 160×48 and feeds it one Sample every
// 50 ms; it measures the process's CPU time (getrusage: user + system)
// per Sample and reports it as the share of one core at 4 Hz. Run it with
// a fixed count, e.g. -bench ProgramCPU -benchtime 80x.
func BenchmarkProgramCPU(b *testing.B) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(termenv.TrueColor)
	defer lipgloss.SetColorProfile(prev)
	f := goldenFake()
	pr, pw := io.Pipe()
	defer pw.Close()
	p := tea.NewProgram(New(f), tea.WithInput(pr), tea.WithOutput(io.Discard), tea.WithContext(context.Background()))
	done := make(chan struct{})
	go func() { _, _ = p.Run(); close(done) }()
	p.Send(tea.WindowSizeMsg{Width: 160, Height: 48})
	samples := fixedSamples()
	for _, s := range samples { // fill history
		f.ch <- s
	}
	time.Sleep(200 * time.Millisecond)
	before := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.ch <- samples[i%len(samples)]
		time.Sleep(50 * time.Millisecond)
	}
	used := cpuTime() - before
	b.StopTimer()
	p.Quit()
	<-done
	perFrame := float64(used.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perFrame, "cpu-ns/frame")
	b.ReportMetric(4*perFrame/1e9*100, "%core@4Hz")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
