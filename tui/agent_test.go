package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestHeaderShowsAgents: with agent traffic the header shows the level
// agent tasks are planned at and their success; without, nothing.
func TestHeaderShowsAgents(t *testing.T) {
	m := New(newFake())
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	s := fixedSamples()[0]
	m.Update(sampleMsg(s))
	if v := ansi.Strip(m.View()); strings.Contains(v, "agents ") {
		t.Fatalf("agents shown without agent traffic:\n%s", v)
	}
	s.Agent = &runfiles.AgentSample{Level: "yellow", SuccessRate: 0.925, SuccessFinished: 40}
	m.Update(sampleMsg(s))
	head := strings.Join(strings.Fields(strings.SplitN(ansi.Strip(m.View()), "\n", 2)[0]), " ")
	if !strings.Contains(head, "agents YELLOW 92.50%") {
		t.Fatalf("header lacks the agents' level and success: %s", head)
	}
}

// TestHeaderKeepsRecording: at 80 columns, with agents and a paused ramp
// filling the header, the recording badge still shows.
func TestHeaderKeepsRecording(t *testing.T) {
	f := newFake()
	f.recording, f.paused = true, true
	m := New(f)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	s := fixedSamples()[30]
	s.TargetRPS, s.OfferedRPS = 2100, 2228
	s.Agent = &runfiles.AgentSample{Level: "yellow", SuccessRate: 0.925, SuccessFinished: 40}
	m.Update(sampleMsg(s))
	head := strings.SplitN(ansi.Strip(m.View()), "\n", 2)[0]
	if !strings.Contains(head, "● REC") {
		t.Errorf("the 80-column header lost the recording badge: %q", head)
	}
}
