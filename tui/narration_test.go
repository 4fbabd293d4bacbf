package tui

import (
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab/lesson"
)

// quotedLine is a dashboard line a narration step tells the room to
// watch, quoted: '+ client retries'.
var quotedLine = regexp.MustCompile(`'(\+ [^']+)'`)

// TestNarrationQuotesScreenLines: a lesson step that says "watch '+ …'"
// names a line the dashboard draws, word for word, so that the room
// finds it. Lessons 10 and 10b said '+ retries' while the req/s panel
// draws "+ client retries N".
func TestNarrationQuotesScreenLines(t *testing.T) {
	lessons, err := lesson.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	m := New(newFake())
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	s := fixedSamples()[0]
	s.ClientRetriesTotal, s.ClientRetryRPS = 120, 300
	m.Update(sampleMsg(s))
	view := ansi.Strip(m.View())
	found := 0
	for _, l := range lessons {
		for i, st := range l.Experiment.Narration {
			for _, q := range quotedLine.FindAllStringSubmatch(st.Text, -1) {
				found++
				if !strings.Contains(view, q[1]+" ") {
					t.Errorf("lesson %s step %d quotes %q, which the dashboard does not draw:\n%s", l.Number, i+1, q[1], view)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no lesson quotes a '+ …' line: the test checks nothing")
	}
}
