package tui

import (
	"math"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

func ringOf(pts ...point) *ring {
	r := newRing(16)
	for _, p := range pts {
		r.push(p)
	}
	return r
}

// columns returns which cell columns of the rendered lines hold any dot.
func columns(lines []string, w int) []bool {
	cols := make([]bool, w)
	for _, l := range lines {
		for x, c := range []rune(l) {
			if c != ' ' && x < w {
				cols[x] = true
			}
		}
	}
	return cols
}

func TestRenderBraille(t *testing.T) {
	st := []lipgloss.Style{lipgloss.NewStyle()}
	tests := []struct {
		name     string
		now      float64
		pts      []point
		wantCols string // per cell column: # has dots, . empty
	}{
		{name: "empty", now: 10, wantCols: "......"},
		{name: "point now is at the right edge", now: 10, pts: []point{{t: 10, v: 1, ok: true}}, wantCols: ".....#"},
		{name: "1 s ago is 4 dots = 2 cells left", now: 10, pts: []point{{t: 9, v: 1, ok: true}}, wantCols: "...#.."},
		{name: "older than the window is not drawn", now: 10, pts: []point{{t: 5, v: 1, ok: true}}, wantCols: "......"},
		{name: "a line enters from the left edge", now: 10, pts: []point{{t: 5, v: 1, ok: true}, {t: 10, v: 1, ok: true}}, wantCols: "######"},
		{name: "a late tick is a longer segment", now: 10, pts: []point{{t: 9, v: 1, ok: true}, {t: 10, v: 1, ok: true}}, wantCols: "...###"},
		{name: "a stale point leaves a gap", now: 10, pts: []point{{t: 8.5, v: 1, ok: true}, {t: 9.25, ok: false}, {t: 10, v: 1, ok: true}}, wantCols: "..#..#"},
		{name: "values above top are clamped, not dropped", now: 10, pts: []point{{t: 10, v: 1e9, ok: true}}, wantCols: ".....#"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := renderBraille(6, 2, tt.now, []*ring{ringOf(tt.pts...)}, st, []float64{1})
			if len(lines) != 2 {
				t.Fatalf("%d lines, want 2", len(lines))
			}
			var got strings.Builder
			for _, c := range columns(lines, 6) {
				if c {
					got.WriteByte('#')
				} else {
					got.WriteByte('.')
				}
			}
			if got.String() != tt.wantCols {
				t.Errorf("columns %s, want %s:\n%s", got.String(), tt.wantCols, strings.Join(lines, "\n"))
			}
			for _, l := range lines {
				if n := len([]rune(l)); n != 6 {
					t.Errorf("line %q is %d cells, want 6", l, n)
				}
			}
		})
	}
}

func TestNiceCeil(t *testing.T) {
	tests := []struct{ v, floor, want float64 }{
		{0, 1, 1}, {0.3, 1, 1}, {1.5, 1, 2}, {3, 1, 5}, {7, 1, 10}, {10, 1, 10}, {11, 1, 20}, {420, 1, 500}, {1200, 1, 2000},
	}
	for _, tt := range tests {
		if got := niceCeil(tt.v, tt.floor); got != tt.want {
			t.Errorf("niceCeil(%g, %g) = %g, want %g", tt.v, tt.floor, got, tt.want)
		}
	}
}

func TestRing(t *testing.T) {
	r := newRing(3)
	if r.last().ok {
		t.Error("empty ring has an ok last point")
	}
	for i := 1; i <= 5; i++ {
		r.push(point{t: float64(i), v: float64(i), ok: true})
	}
	if r.len() != 3 || r.at(0).v != 3 || r.last().v != 5 {
		t.Errorf("ring after 5 pushes into 3: len %d, oldest %g, newest %g; want 3, 3, 5", r.len(), r.at(0).v, r.last().v)
	}
}

func TestFmt(t *testing.T) {
	tests := []struct {
		f    func(float64) string
		v    float64
		want string
	}{
		{fmtNum, 0, "0"}, {fmtNum, 0.42, "0.4"}, {fmtNum, 87.4, "87"}, {fmtNum, 1234, "1.2k"}, {fmtNum, 3.4e6, "3.4M"},
		{fmtPct, 100, "100"}, {fmtPct, 99.999, "99.99"}, {fmtPct, 71.2, "71.20"}, {fmtPct, 0, "0.00"},
	}
	for _, tt := range tests {
		if got := tt.f(tt.v); got != tt.want {
			t.Errorf("fmt(%g) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestChartNonFinite: a value that is not a number (NaN, +Inf, -Inf) is
// drawn as a gap with "—" as its current value. An +Inf in the window made
// the panel's scale "top +InfG ms" and pinned every series of the panel to
// its top edge (renderBraille falls back to a top of 1) until it scrolled
// out, and the legend printed "+InfG".
func TestChartNonFinite(t *testing.T) {
	for _, bad := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		m := New(newFake())
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		for i, s := range fixedSamples()[:40] {
			if i == 30 {
				s.LagProbeP99Ms = bad // in the window, not the newest
			}
			if i == 39 {
				s.SchedLatencyP99Ms = bad // the newest
			}
			m.Update(sampleMsg(s))
		}
		v := ansi.Strip(m.View())
		if strings.Contains(v, "Inf") || strings.Contains(v, "NaN") {
			t.Errorf("%v: the view prints it:\n%s", bad, v)
		}
		lag := ansi.Strip(m.renderPanel(0, 54, 14))
		for _, want := range []string{"probe      6.0 ms", "sched           —│", "top 10 ms"} {
			if !strings.Contains(lag, want) {
				t.Errorf("%v: the lag panel lacks %q:\n%s", bad, want, lag)
			}
		}
	}
}

// TestLatencyWithoutAnswers: a tick in which no admitted request ended
// measured no latency (the Sample holds 0 ms and no histogram). The
// latency panel drew it as 0 ms: at 1 req/s (seen in tmux) the legend
// flipped between "p99 0 ms" and the real value and the chart fell to the
// floor between answers. It is a gap and "—" now.
func TestLatencyWithoutAnswers(t *testing.T) {
	m := New(newFake())
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	for i, s := range fixedSamples()[:40] {
		s.AdmittedP50Ms, s.AdmittedP99Ms, s.AdmittedHist = 400, 500, "HISTFAAA…"
		if i%2 == 1 { // none ended in this tick
			s.AdmittedP50Ms, s.AdmittedP99Ms, s.AdmittedHist = 0, 0, ""
		}
		m.Update(sampleMsg(s))
	}
	var lat int
	for i, p := range panels {
		if p.id == "latency" {
			lat = i
		}
	}
	lines := strings.Split(ansi.Strip(m.renderPanel(lat, 54, 14)), "\n")
	for _, want := range []string{"p99             —│", "p50             —│", "top 500 ms"} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("the latency panel lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	// The chart's bottom row (0 ms) stays empty: nothing measured 0 ms.
	bottom := []rune(lines[len(lines)-2])[1 : 1+54-2-21]
	if strings.TrimSpace(string(bottom)) != "" {
		t.Errorf("the chart draws 0 ms: %q\n%s", string(bottom), strings.Join(lines, "\n"))
	}
}

// TestDash: a dash draws its runs in turn along the line, the zero dash
// every dot; its legend sample shows the first four dots.
func TestDash(t *testing.T) {
	tests := []struct {
		d      dash
		dots   string // the first eight dots: # drawn
		sample string
	}{
		{nil, "########", "⠒⠒"},
		{dash{1, 1}, "#.#.#.#.", "⠂⠂"},
		{dash{2, 2}, "##..##..", "⠒ "},
		{dash{3, 1}, "###.###.", "⠒⠂"},
		{dash{1, 3}, "#...#...", "⠂ "},
		{dash{2, 1}, "##.##.##", "⠒⠐"},
	}
	samples := map[string]bool{}
	for _, tt := range tests {
		var got strings.Builder
		for k := range 8 {
			if tt.d.on(k) {
				got.WriteByte('#')
			} else {
				got.WriteByte('.')
			}
		}
		if got.String() != tt.dots {
			t.Errorf("%v: dots %s, want %s", tt.d, got.String(), tt.dots)
		}
		if s := tt.d.sample(); s != tt.sample {
			t.Errorf("%v: sample %q, want %q", tt.d, s, tt.sample)
		}
		samples[tt.d.sample()] = true
	}
	if len(samples) != len(monoDashes) {
		t.Errorf("%d distinct legend samples for %d patterns", len(samples), len(monoDashes))
	}
	// A flat line three cells long: solid fills both dots of each cell,
	// {1, 1} one of each.
	flat := ringOf(point{t: 8.75, v: 0.5, ok: true}, point{t: 10, v: 0.5, ok: true})
	solid := renderBraille(3, 1, 10, []*ring{flat}, []lipgloss.Style{lipgloss.NewStyle()}, []float64{1})
	dotted := renderBraille(3, 1, 10, []*ring{flat}, []lipgloss.Style{lipgloss.NewStyle()}, []float64{1}, dash{1, 1})
	if solid[0] == dotted[0] || strings.Count(dotted[0], " ") > 0 {
		t.Errorf("flat line: solid %q, dotted %q; want every cell drawn, the dotted one with fewer dots", solid[0], dotted[0])
	}
}

// TestChartsWithoutColours: on a terminal without colours (NO_COLOR, or
// a dumb terminal) the series of a chart differ by their dashes, and the
// legend shows each one's; every line looked the same before. With
// colours the lines are solid and the legend's mark is ━.
func TestChartsWithoutColours(t *testing.T) {
	prev := lipgloss.ColorProfile()
	defer lipgloss.SetColorProfile(prev)
	for _, profile := range []termenv.Profile{termenv.Ascii, termenv.ANSI256} {
		lipgloss.SetColorProfile(profile)
		m := New(newFake())
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		for _, s := range fixedSamples()[:40] {
			m.Update(sampleMsg(s))
		}
		lag := ansi.Strip(m.renderPanel(0, 54, 14))
		for j, name := range []string{"probe", "sched", "GC pause"} {
			mark := "━"
			if profile == termenv.Ascii {
				mark = monoDashes[j].sample()
			}
			if !strings.Contains(lag, mark+" "+name) {
				t.Errorf("profile %v: the lag panel lacks %q:\n%s", profile, mark+" "+name, lag)
			}
		}
	}
}
