package tui

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestSuccessUnmeasured: when nothing of a class finished in the success
// window (a stall: every request waits on a node), its rate of 1 is a
// convention; the header, the P0 panel and the chart show "—" and a gap,
// not a green 100 %.
func TestSuccessUnmeasured(t *testing.T) {
	m := New(newFake())
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	s := fixedSamples()[5]
	stalled := map[string]runfiles.PrioritySample{}
	for p, ps := range s.ByPriority {
		ps.SuccessRate, ps.SuccessFinished = 1, 0
		stalled[p] = ps
	}
	s.ByPriority = stalled
	s.Agent = &runfiles.AgentSample{Level: "green", SuccessRate: 1}
	m.Update(sampleMsg(s))
	v := ansi.Strip(m.View())
	head := strings.Join(strings.Fields(strings.SplitN(v, "\n", 2)[0]), " ")
	for _, want := range []string{"P0 —%", "agents GREEN —%"} {
		if !strings.Contains(head, want) {
			t.Errorf("header lacks %q: %s", want, head)
		}
	}
	if strings.Contains(head, "100%") {
		t.Errorf("header shows 100%% with nothing finished: %s", head)
	}
	if !strings.Contains(v, "P1 —%   P2 —%") {
		t.Errorf("P0 panel lacks P1 —%% P2 —%%:\n%s", v)
	}
	if got := successValue(s.ByPriority["P0"]); !math.IsNaN(got) {
		t.Errorf("chart value %v with nothing finished; want NaN (a gap)", got)
	}
	if got := successValue(runfiles.PrioritySample{SuccessRate: 0.5, SuccessFinished: 8}); got != 50 {
		t.Errorf("chart value %v; want 50", got)
	}
}

func TestFmtNumWidth(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {0.42, "0.4"}, {3.14, "3.1"}, {9.96, "10"}, {87, "87"}, {999.4, "999"}, {999.6, "1.0k"},
		{1234, "1.2k"}, {99_950, "100k"}, {123_456, "123k"}, {999_950, "1.0M"}, {3.4e6, "3.4M"},
		{2.5e9, "2.5G"}, {1e13, "10T"}, {-87, "-87"}, {math.Inf(1), "≫1P"}, {math.NaN(), "—"},
	} {
		got := fmtNum(tc.v)
		if got != tc.want {
			t.Errorf("fmtNum(%v) = %q; want %q", tc.v, got, tc.want)
		}
		if w := utf8.RuneCountInString(strings.TrimPrefix(got, "-")); w > 5 {
			t.Errorf("fmtNum(%v) = %q: %d cells", tc.v, got, w)
		}
	}
}
