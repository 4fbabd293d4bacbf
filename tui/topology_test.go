package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/runfiles"
)

// manyNodes is a Sample of n nodes of 4 slots, all in rotation.
func manyNodes(n int) runfiles.Sample {
	s := fixedSamples()[40]
	s.Nodes = nil
	for i := 0; i < n; i++ {
		s.Nodes = append(s.Nodes, runfiles.NodeSample{Index: i, Addr: fmt.Sprintf("127.0.0.1:%d", 41001+i),
			Up: true, Busy: 4, Slots: 4, Queued: 1, Ejection: wire.EjectionInRotation})
	}
	return s
}

// screenRows returns the view's lines from the one starting with prefix
// up to the next labelled row (its continuation lines included), ANSI
// stripped and joined.
func screenRows(view, prefix string) string {
	var out []string
	in := false
	for _, l := range strings.Split(ansi.Strip(view), "\n") {
		switch {
		case strings.HasPrefix(l, prefix):
			in = true
		case in && !strings.HasPrefix(l, "         "):
			in = false
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestNodesPastTheFold: twelve nodes at 80×24 and 100×30 do not fit the
// one-line nodes row; a node down and a node ejected (#10 and #8, past
// the fold in index order) still show, and the row says how many nodes it
// leaves out. Where all fit (200 wide), the row keeps index order and
// counts nothing.
func TestNodesPastTheFold(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}, {200, 60}} {
		s := manyNodes(12)
		s.Nodes[9].Up, s.Nodes[9].Busy, s.Nodes[9].RestartIn = false, 0, 3
		s.Nodes[7].Ejection = wire.EjectionEjected
		m := New(goldenFake())
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m.Update(sampleMsg(s))
		view := m.View()
		checkFrame(t, view, size[0], size[1])
		row := screenRows(view, " nodes")
		for _, want := range []string{"#10 ✕ down (restart 3 s)", "#8 ⊘ ejected 4/4"} {
			if !strings.Contains(row, want) {
				t.Errorf("%dx%d: the nodes row lacks %q: %q", size[0], size[1], want, row)
			}
		}
		shown := strings.Count(row, "#")
		if shown == 12 {
			if strings.Contains(row, "more") || strings.Index(row, "#1 ") > strings.Index(row, "#8 ") {
				t.Errorf("%dx%d: every node fits, yet the row is reordered or counted: %q", size[0], size[1], row)
			}
			continue
		}
		if want := fmt.Sprintf("… %d more nodes", 12-shown); !strings.Contains(row, want) {
			t.Errorf("%dx%d: %d nodes shown, the row lacks %q: %q", size[0], size[1], shown, want, row)
		}
	}
}

// TestLessonRowLongTitle: an experiment's own title, not a numbered
// lesson's and longer than the row, is what gets cut: the step, its kind
// and (on one line, 80×24 and 100×30) the start of the step's text still
// show; at 160×48 the step and kind end the title line.
func TestLessonRowLongTitle(t *testing.T) {
	title := "Twelve nodes behind four gateways, a title far longer than any lesson's title, to see where it gets cut and whether anything overlaps it"
	for _, size := range [][2]int{{80, 24}, {100, 30}, {160, 48}} {
		f := goldenFake()
		f.lesson = lab.LessonState{Title: title, Step: 2, Steps: 3, Kind: "watch", Text: "Node 10 dies at 8 s, node 8 hangs at 12 s."}
		m := New(f)
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m.Update(sampleMsg(fixedSamples()[0]))
		view := m.View()
		checkFrame(t, view, size[0], size[1])
		row := screenRows(view, " lesson")
		want := []string{"Twelve nodes", "… · step 2/3 · WATCH", "Node 10 dies"}
		if size[0] < 120 {
			want[2] = "WATCH — Node 10 dies"
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%dx%d: the lesson row lacks %q:\n%s", size[0], size[1], w, row)
			}
		}
	}
}

// TestLegendValuesWhole: at 80×24 a legend is 19 cells; a value there is
// never cut, its label is. Lesson 10's narration says to watch "+ client
// retries", whose value (≥ 100/s in the storm) showed as "1…"; without
// colours a series' mark is two cells, and "queue full 100k/s" lost its
// unit. Checked with colours and without, at 80×24 and 160×48.
func TestLegendValuesWhole(t *testing.T) {
	defer lipgloss.SetColorProfile(termenv.Ascii)
	for _, profile := range []termenv.Profile{termenv.Ascii, termenv.ANSI256} {
		lipgloss.SetColorProfile(profile)
		for _, size := range [][2]int{{80, 24}, {160, 48}} {
			s := manyNodes(3)
			s.ClientRetriesTotal, s.ClientRetryRPS = 500, 120
			s.RetryRPS, s.HedgeRPS = 1234, 1234
			s.ShedRPSByReason = map[string]float64{"queue_full": 99999}
			s.OOMKills = 12345
			m := New(goldenFake())
			m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			m.Update(sampleMsg(s))
			view := m.View()
			press(m, tea.KeyMsg{Type: tea.KeyTab})
			view += "\n" + m.View()
			checkFrame(t, m.View(), size[0], size[1])
			plain := ansi.Strip(view)
			for _, want := range []string{
				`\+ client re[^│]* 120 *│`,
				`retry 1\.2k h[^│]* 1\.2k *│`,
				`queue f[^│]* 100k/s *│`,
				`OOM kills 12345 *│`,
			} {
				if !regexp.MustCompile(want).MatchString(plain) {
					t.Errorf("%v %dx%d: no legend line matches %s:\n%s", profile, size[0], size[1], want, plain)
				}
			}
		}
	}
}

// TestActiveFaultsCounted: five faults active at once (their details as
// the lab gives them) do not all fit the fault row at 80×24 or 100×30;
// the row shows as many as fit, ahead of the others, and says how many
// active ones it leaves out. Where they all fit, no count.
func TestActiveFaultsCounted(t *testing.T) {
	details := map[int]string{1: "×3 all nodes", 2: "gateway 200MB/s +256MB", 6: "4 slots all nodes", 7: "#1", 8: "50% all nodes"}
	for _, size := range [][2]int{{80, 24}, {100, 30}, {160, 48}, {240, 60}} {
		f := goldenFake()
		fullCatalogue(f)
		for i, d := range details {
			f.faults[i].Active, f.faults[i].Detail = true, d
		}
		m := New(f)
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m.Update(sampleMsg(fixedSamples()[0]))
		view := m.View()
		checkFrame(t, view, size[0], size[1])
		row := screenRows(view, " faults")
		shown := strings.Count(row, "●")
		if shown == 0 {
			t.Errorf("%dx%d: no active fault shows: %q", size[0], size[1], row)
		}
		want := fmt.Sprintf("… +%d active", len(details)-shown)
		if got := strings.Contains(row, " active"); got != (shown < len(details)) || got && !strings.Contains(row, want) {
			t.Errorf("%dx%d: %d of %d active faults shown; want the row to say %q only when some are left out: %q",
				size[0], size[1], shown, len(details), want, row)
		}
	}
}

// TestFailedFaultCounted: a fault whose apply failed (not active) and is
// left out past the fold is counted apart from the active ones.
func TestFailedFaultCounted(t *testing.T) {
	f := goldenFake()
	fullCatalogue(f)
	f.faults[1].Active, f.faults[1].Detail = true, "×3 all nodes"
	f.faults[6].Active, f.faults[6].Detail = true, "4 slots all nodes"
	f.faults[8].Error = "model_errors: PUT /admin/knobs: connection refused"
	m := New(f)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(sampleMsg(fixedSamples()[0]))
	row := screenRows(m.View(), " faults")
	if !strings.Contains(row, "[2] model_latency ●") || !strings.Contains(row, "… +1 active +1 failed") {
		t.Errorf("80×24: want model_latency shown, then '… +1 active +1 failed': %q", row)
	}
}

// TestCountsWhole: the limit panel's counts print as counts: one node of
// 8 slots with 3 in flight and 6 queued read "8", "3", "6" (as the nodes
// row has them), not "8.0", "3.0", "6.0"; a limit of 2,048 over sixteen
// gateways is still "2.0k".
func TestCountsWhole(t *testing.T) {
	s := manyNodes(1)
	s.Nodes[0].Slots, s.Nodes[0].Busy = 8, 3
	s.Inflight, s.QueueDepth, s.ConcurrencyLimit = 3, 6, 2048
	m := New(goldenFake())
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(sampleMsg(s))
	plain := ansi.Strip(m.View())
	for _, want := range []string{`limit +2\.0k│`, `slots +8│`, `in-flight +3│`, `queue +6│`} {
		if !regexp.MustCompile(want).MatchString(plain) {
			t.Errorf("no legend line matches %s:\n%s", want, plain)
		}
	}
}
