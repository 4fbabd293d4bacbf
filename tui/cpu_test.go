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
// 250 ms, the lab's 4 Hz; it measures the process's CPU time (getrusage:
// user + system) over those ticks and reports it per Sample and as the
// share of one core. At 4 Hz, not faster: what the program spends
// between Samples (the renderer's own ticker, timers, the GC) is part of
// the cost, and a faster feed spread it over more Samples (at 20 Hz it
// read 1.3–1.4 % of a core where 4 Hz read 1.7–1.9 %, in the same
// quarter of an hour). Run it with a fixed count, e.g. -bench ProgramCPU
// -benchtime 20x (5 s).
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
		time.Sleep(sampleEvery)
	}
	used := cpuTime() - before
	b.StopTimer()
	p.Quit()
	<-done
	perFrame := float64(used.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perFrame, "cpu-ns/frame")
	b.ReportMetric(perFrame/float64(sampleEvery.Nanoseconds())*100, "%core@4Hz")
}

// sampleEvery is the lab's sampling interval (4 Hz), at which
// BenchmarkProgramCPU feeds the program.
const sampleEvery = 250 * time.Millisecond

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
