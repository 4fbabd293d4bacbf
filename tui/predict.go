package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/runfiles"
)

// maxPromptRunes bounds what may be typed into the prediction prompt.
const maxPromptRunes = 9

// prompt is the prediction prompt: a predict step that names a number asks
// for it until the room answers or skips (esc). Digits, '.' (or a decimal
// ',', read as '.'), '-' and backspace go to it; every other key works as
// usual.
type prompt struct {
	ask   *lab.PredictionAsk // nil: no prompt
	input string
	asked int // the last step a prompt opened for (never twice)
}

// refreshPrompt opens the prompt when the lesson shows a predict step
// waiting for its number.
func (m *Model) refreshPrompt() {
	a := m.lesson.Ask
	if a == nil || a.Answered || a.Step == m.prompt.asked {
		return
	}
	c := *a
	m.prompt = prompt{ask: &c, asked: a.Step}
}

// promptKey handles a key while the prompt is open; handled is false for
// keys it leaves to the dashboard.
func (m *Model) promptKey(msg tea.KeyMsg) (handled bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.PromptSkip):
		m.answer(lab.PredictionAnswer{Step: m.prompt.ask.Step, Skipped: true})
		return true
	case key.Matches(msg, k.PromptSave):
		v, err := strconv.ParseFloat(strings.TrimSpace(m.prompt.input), 64)
		if err != nil {
			m.setStatus(fmt.Sprintf("%q is not a number: type one (enter saves, esc skips)", m.prompt.input), true)
			return true
		}
		m.answer(lab.PredictionAnswer{Step: m.prompt.ask.Step, Value: v})
		return true
	case msg.Type == tea.KeyBackspace:
		if r := []rune(m.prompt.input); len(r) > 0 {
			m.prompt.input = string(r[:len(r)-1])
		}
		return true
	case msg.Type == tea.KeyRunes && numeric(msg.Runes):
		// Fast typing and pastes come as several runes in one message. A
		// decimal comma is a point: "95,5" is 95.5, not 955.
		in := []rune(m.prompt.input + strings.ReplaceAll(string(msg.Runes), ",", "."))
		m.prompt.input = string(in[:min(len(in), maxPromptRunes)])
		return true
	}
	return false
}

// numeric reports whether rs are all characters of a number.
func numeric(rs []rune) bool {
	for _, r := range rs {
		if !strings.ContainsRune("0123456789.,-", r) {
			return false
		}
	}
	return len(rs) > 0
}

// answer records a prediction through the lab (it returns at once) and
// closes the prompt.
func (m *Model) answer(a lab.PredictionAnswer) {
	ask := m.prompt.ask
	m.prompt.ask = nil
	if err := m.ctrl.Predict(a); err != nil {
		m.setStatus("prediction: "+err.Error(), true)
		return
	}
	if a.Skipped {
		m.setStatus(fmt.Sprintf("step %d: prediction skipped", a.Step), false)
	} else {
		m.setStatus(fmt.Sprintf("step %d: predicted %s — it shows beside the measured value at the explain step", a.Step, runfiles.FormatPredictionValue(a.Value, ask.Unit)), false)
	}
	m.lesson = m.ctrl.Lesson()
}

// promptBox is the prompt drawn over the charts.
func (m *Model) promptBox(w int) string {
	a := m.prompt.ask
	w = min(w, 60)
	unit := ""
	if a.Unit != "" {
		unit = " " + clean(a.Unit)
	}
	body := []string{
		"",
		"  " + stBold.Render(clean(a.Question)),
		"",
		"  > " + stSelected.Render(m.prompt.input+"▏") + unit,
		"",
		stDim.Render("  enter saves · esc skips · it shows beside the"),
		stDim.Render("  measured value when the explain step comes"),
	}
	return box(fmt.Sprintf(" %s ", stTitle.Render(fmt.Sprintf("predict · step %d", a.Step))), w, len(body)+2, body)
}

// resultsText is the predictions measured at the current explain step:
// "P0 success 100 % (you: 60 %) · P2 success 6.42 % (skipped)".
func resultsText(rs []runfiles.Prediction) string {
	var parts []string
	for _, r := range rs {
		s := r.Label() + " "
		if r.Measured != nil {
			s += runfiles.FormatPredictionValue(*r.Measured, r.Unit)
		} else {
			s += "not measured"
		}
		switch {
		case r.Predicted != nil:
			s += " (you: " + runfiles.FormatPredictionValue(*r.Predicted, r.Unit) + ")"
		case r.Skipped:
			s += " (skipped)"
		default:
			s += " (no prediction)"
		}
		parts = append(parts, s)
	}
	return clean(strings.Join(parts, " · "))
}
