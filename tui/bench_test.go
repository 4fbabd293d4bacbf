package tui

import (
	"fmt"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// BenchmarkFrame measures the dashboard's work per Sample: Update (fold the
// Sample in, re-render the charts) plus View (compose the screen), which is
// what the program does once per tick. At 4 Hz the CPU share of one core is
// 4 × ns/frame / 1e9; the benchmark reports it as %core@4Hz. Colours are on
// (TrueColor), as in a real terminal, which costs more than the goldens.
func BenchmarkFrame(b *testing.B) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 48}, {240, 70}} {
		b.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(b *testing.B) {
			prev := lipgloss.ColorProfile()
			lipgloss.SetColorProfile(termenv.TrueColor)
			defer lipgloss.SetColorProfile(prev)
			samples := fixedSamples()
			m := New(goldenFake())
			m.Update(tea.WindowSizeMsg{Width: size.w, Height: size.h})
			for _, s := range samples { // fill the charts' history
				m.Update(sampleMsg(s))
			}
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for i := 0; i < b.N; i++ {
				m.Update(sampleMsg(samples[i%len(samples)]))
				n += len(m.View())
			}
			b.StopTimer()
			if n == 0 {
				b.Fatal("empty frames")
			}
			nsPerFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(4*nsPerFrame/1e9*100, "%core@4Hz")
		})
	}
}
