package tui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/load"
)

// handleKey routes one key: quit first (and only quit while the lab
// stops or a lesson starts), then the box that is open (the lesson
// picker, the full help's esc, the prediction prompt, the defenses
// panel), else the main screen.
func (m *Model) handleKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	if m.stopping {
		// A second quit while stopping gives up waiting: with WithKill,
		// the lab is killed at once.
		if key.Matches(msg, k.Quit) {
			if m.hurry.kill != nil {
				m.setStatus("second interrupt: killing every child process…", true)
				m.hurry.interrupt()
			}
			return m, tea.Quit
		}
		return m, nil
	}
	if key.Matches(msg, k.Quit) {
		return m, m.quit()
	}
	if m.switching != "" {
		m.setStatus("starting "+m.switching+"… (q quits)", false)
		return m, nil
	}
	if m.pick.open {
		return m.pickerKey(msg)
	}
	// esc closes the full help, as it closes the panels, before the
	// prompt under it would take it as "skip".
	if m.showHelp && msg.Type == tea.KeyEsc {
		m.showHelp, m.help.ShowAll = false, false
		return m, nil
	}
	if m.prompt.ask != nil && !m.panelOpen && m.promptKey(msg) {
		return m, nil
	}
	if m.panelOpen {
		return m.panelKey(msg)
	}
	return m.mainKey(msg)
}

// mainKey handles a key on the main screen, no box or prompt taking it.
func (m *Model) mainKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.RateUp), key.Matches(msg, k.RateDown):
		// From 0 (a lesson may start there) ↑ goes to 1 req/s, since ×1.25
		// of 0 is 0; near the lab's maximum it goes to the maximum.
		r := min(max(m.ctrl.Rate()*rateFactor, 1), load.MaxRate)
		if key.Matches(msg, k.RateDown) {
			r = m.ctrl.Rate() / rateFactor
		}
		// The lab refuses a rate out of range, and any once it is finishing
		// (the lesson ended): the status line shows that rather than a
		// change that did not happen.
		m.setRate(r)
	case key.Matches(msg, k.Spike):
		if err := m.ctrl.Spike(spikeFactor, spikeDuration); err != nil {
			m.setStatus("no spike: "+err.Error(), true)
		} else {
			m.setStatus(fmt.Sprintf("spike ×%d for %s", spikeFactor, spikeDuration), false)
		}
	case key.Matches(msg, k.Pause):
		p := !m.ctrl.RampPaused()
		err := m.ctrl.PauseRamp(p)
		m.paused = m.ctrl.RampPaused()
		switch {
		case err != nil:
			m.setStatus("ramp unchanged: "+err.Error(), true)
		case p:
			m.setStatus("ramp paused", false)
		default:
			m.setStatus("ramp resumed", false)
		}
	case key.Matches(msg, k.Fault):
		m.toggleFault(msg.String())
	case key.Matches(msg, k.Defenses):
		m.defenses = m.ctrl.Defenses()
		m.panelOpen, m.showHelp = true, false
		if m.panelSel >= len(m.defenseNames()) {
			m.panelSel = 0
		}
	case key.Matches(msg, k.Record):
		return m, m.toggleRecording()
	case key.Matches(msg, k.Next):
		err := m.ctrl.NextStep()
		m.lesson = m.ctrl.Lesson()
		m.refreshPrompt()
		switch {
		case m.lesson.Steps == 0:
			m.setStatus("no lesson: this run plays no experiment narration", false)
		case errors.Is(err, lab.ErrNoNextStep):
			// Its last step shows: the error says so already ("lab: no
			// next step: step 4/4 is the last"), without the "lab: ".
			m.setStatus(strings.TrimPrefix(err.Error(), "lab: "), true)
		case err != nil:
			// The lesson ended (the lab is finishing): the status line
			// says why n moved nothing.
			m.setStatus("no next step: "+err.Error(), true)
		}
	case key.Matches(msg, k.Lessons):
		m.openPicker()
	case (key.Matches(msg, k.Page) || key.Matches(msg, k.PrevPage)) && m.lay.tooSmall:
		// No panel shows at all: "already shows on this one page" was false.
		m.setStatus(fmt.Sprintf("%s: no panel shows below %d×%d", msg.String(), minWidth, minHeight), false)
	case (key.Matches(msg, k.Page) || key.Matches(msg, k.PrevPage)) && m.lay.pages <= 1:
		// Nothing to page through: say so rather than ignore the key.
		m.setStatus("tab: every panel already shows on this one page", false)
	case key.Matches(msg, k.Page):
		m.page = (m.page + 1) % m.lay.pages
		m.renderPanels()
	case key.Matches(msg, k.PrevPage):
		m.page = (m.page + m.lay.pages - 1) % m.lay.pages
		m.renderPanels()
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		m.help.ShowAll = m.showHelp
	case key.Matches(msg, k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose, k.PickStart, k.PromptSave, k.PromptSkip):
		// The full help lists these with the boxes they work in; pressed
		// with none open they would do nothing, silently.
		name := msg.String()
		if name == " " {
			name = "space"
		}
		m.setStatus(name+": nothing here to select, confirm or close (d defenses, l lessons)", false)
	}
	return m, nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// noteFaultErrors takes the lab's fault list and puts a fault's new
// failure (an apply or revert that failed on the lab's goroutine, after the
// key press returned) on the status line: the row's ⚠ says which fault, the
// status line says why.
func (m *Model) noteFaultErrors(faults []lab.FaultStatus) {
	prev := map[string]string{}
	for _, f := range m.faults {
		prev[f.Name] = f.Error
	}
	for _, f := range faults {
		if f.Error != "" && f.Error != prev[f.Name] {
			m.setStatus(fmt.Sprintf("fault %s: %s", f.Name, f.Error), true)
		}
	}
	m.faults = faults
	// The full help names the keys this catalogue uses ("1-9,0,!").
	m.keys.Fault.SetHelp(faultKeysHelp(len(faults)), faultHelpDesc)
}

func (m *Model) toggleFault(k string) {
	for _, f := range m.faults {
		if f.Key != k {
			continue
		}
		if f.Unavailable != "" {
			m.setStatus(fmt.Sprintf("fault %s is unavailable here: %s", f.Name, f.Unavailable), true)
			return
		}
		if err := m.ctrl.ToggleFault(f.Name); err != nil {
			m.setStatus(fmt.Sprintf("fault %s: %v", f.Name, err), true)
		} else if f.Active {
			m.setStatus("fault "+f.Name+": reverting", false)
		} else {
			m.setStatus("fault "+f.Name+": applying", false)
		}
		m.noteFaultErrors(m.ctrl.Faults())
		return
	}
	m.setStatus("no fault on key "+k, true)
}
