package tui

import (
	"reflect"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/runfiles"
)

func askingFake() *fakeControls {
	f := goldenFake()
	f.lesson.Ask = &lab.PredictionAsk{Step: 2, Metric: "p0_success_rate", Unit: "%", Question: "P0 success %?"}
	return f
}

func TestGoldenPredictPrompt(t *testing.T) {
	for _, tt := range []struct {
		name string
		w, h int
	}{{"160x48", 160, 48}, {"80x24", 80, 24}} {
		t.Run(tt.name, func(t *testing.T) {
			f := askingFake()
			feed(f, fixedSamples()[:60])
			m := runFixed(t, f, tt.w, tt.h, keyRunes("9"), keyRunes("5"), keyRunes("."), keyRunes("5"))
			view := m.View()
			checkFrame(t, view, tt.w, tt.h)
			golden.RequireEqual(t, []byte(view))
		})
	}
}

// The explain step puts each measured value beside the prediction.
func TestGoldenExplainResults(t *testing.T) {
	for _, tt := range []struct {
		name string
		w, h int
	}{{"160x48", 160, 48}, {"80x24", 80, 24}} {
		t.Run(tt.name, func(t *testing.T) {
			f := goldenFake()
			meas, pred, p2 := 100.0, 60.0, 6.42
			f.lesson = lab.LessonState{Title: "03 · Priority load shedding", Step: 4, Steps: 4, Kind: "explain",
				Text: "Capacity is slots / service time ≈ 210 req/s, whatever arrives. Shedding decides WHO gets it.",
				Results: []runfiles.Prediction{
					{Step: 1, Metric: "p0_success_rate", Unit: "%", Measured: &meas, Predicted: &pred},
					{Step: 2, Metric: "p2_success_rate", Unit: "%", Measured: &p2, Skipped: true},
				}}
			feed(f, fixedSamples()[:60])
			m := runFixed(t, f, tt.w, tt.h)
			view := m.View()
			checkFrame(t, view, tt.w, tt.h)
			if !strings.Contains(ansi.Strip(view), "P0 success 100 % (you: 60 %)") {
				t.Errorf("no result beside the prediction:\n%s", ansi.Strip(view))
			}
			golden.RequireEqual(t, []byte(view))
		})
	}
}

func TestPredictPromptKeys(t *testing.T) {
	tests := []struct {
		name      string
		keys      []tea.KeyMsg
		wantCalls []string
		wantView  string
		open      bool // the prompt is still open
	}{
		{name: "a number and enter", keys: []tea.KeyMsg{keyRunes("6"), keyRunes("0"), {Type: tea.KeyEnter}},
			wantCalls: []string{"Predict(step 2, 60)"}, wantView: "step 2: predicted 60 %"},
		{name: "typed fast: several runes in one message", keys: []tea.KeyMsg{keyRunes("40"), keyRunes(".5"), {Type: tea.KeyEnter}},
			wantCalls: []string{"Predict(step 2, 40.5)"}},
		{name: "a paste is cut at the prompt's length", keys: []tea.KeyMsg{keyRunes("1234567890123"), {Type: tea.KeyEnter}},
			wantCalls: []string{"Predict(step 2, 1.23456789e+08)"}},
		{name: "backspace edits", keys: []tea.KeyMsg{keyRunes("7"), keyRunes("7"), {Type: tea.KeyBackspace}, keyRunes("5"), {Type: tea.KeyEnter}},
			wantCalls: []string{"Predict(step 2, 75)"}},
		{name: "esc skips", keys: []tea.KeyMsg{keyRunes("4"), {Type: tea.KeyEsc}},
			wantCalls: []string{"Predict(step 2, skipped)"}, wantView: "prediction skipped"},
		{name: "not a number", keys: []tea.KeyMsg{keyRunes("-"), {Type: tea.KeyEnter}},
			wantView: `"-" is not a number`, open: true},
		{name: "digits do not toggle faults", keys: []tea.KeyMsg{keyRunes("1")}, open: true, wantView: "> 1"},
		{name: "other keys work", keys: []tea.KeyMsg{keyRunes("p")}, wantCalls: []string{"PauseRamp(true)"}, open: true},
		{name: "enter with nothing typed", keys: []tea.KeyMsg{{Type: tea.KeyEnter}}, wantView: `"" is not a number`, open: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := askingFake()
			m := New(f)
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
			m.Update(sampleMsg(fixedSamples()[0]))
			if m.prompt.ask == nil || !strings.Contains(ansi.Strip(m.View()), "P0 success %?") {
				t.Fatalf("no prompt:\n%s", ansi.Strip(m.View()))
			}
			press(m, tt.keys...)
			if got := f.Calls(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls %q, want %q", got, tt.wantCalls)
			}
			if open := m.prompt.ask != nil; open != tt.open {
				t.Errorf("prompt open %v, want %v", open, tt.open)
			}
			if v := ansi.Strip(m.View()); tt.wantView != "" && !strings.Contains(v, tt.wantView) {
				t.Errorf("view lacks %q:\n%s", tt.wantView, v)
			}
			// An answered step never asks again.
			m.Update(sampleMsg(fixedSamples()[1]))
			if !tt.open && m.prompt.ask != nil {
				t.Error("the prompt opened again after the answer")
			}
		})
	}
}

// TestHelpOverPromptFits: ? while the prediction prompt is open shows the
// full help in its box and keeps the frame: the help bar stays one line
// (the prompt's keys), so the header is not pushed off the screen.
func TestHelpOverPromptFits(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		m := New(askingFake())
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m.Update(sampleMsg(fixedSamples()[0]))
		press(m, keyRunes("?"))
		view := m.View()
		checkFrame(t, view, size[0], size[1])
		lines := strings.Split(ansi.Strip(view), "\n")
		if !strings.Contains(lines[0], "LEVEE") {
			t.Errorf("%dx%d: the first line is not the header: %q", size[0], size[1], lines[0])
		}
		if last := lines[len(lines)-1]; !strings.Contains(last, "type the number") || !strings.Contains(last, "esc skip guess") {
			t.Errorf("%dx%d: the help bar is not the prompt's: %q", size[0], size[1], last)
		}
		if !strings.Contains(ansi.Strip(view), "esc closes this help") {
			t.Errorf("%dx%d: no full help:\n%s", size[0], size[1], ansi.Strip(view))
		}
	}
}

// TestLessonRowOneLine: where the lesson row is one line (80×24, 100×30),
// a numbered lesson's long title shows as its number, so the step's text
// shows; at 160×48 (three lines) the whole title stays.
func TestLessonRowOneLine(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}, {160, 48}} {
		f := goldenFake()
		f.lesson = lab.LessonState{Title: "03 · Priority load shedding: P0 survives a 10× overload", Step: 1, Steps: 4,
			Kind: "predict", Text: "Predict: when the level turns red, what happens to P0?"}
		m := New(f)
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m.Update(sampleMsg(fixedSamples()[0]))
		view := ansi.Strip(m.View())
		checkFrame(t, m.View(), size[0], size[1])
		if !strings.Contains(view, "PREDICT — Predict: when the level") && !strings.Contains(view, "Predict: when the level turns red") {
			t.Errorf("%dx%d: the step's text does not show:\n%s", size[0], size[1], view)
		}
		wantTitle := "03 · step 1/4"
		if size[0] >= 160 {
			wantTitle = "03 · Priority load shedding: P0 survives a 10× overload · step 1/4"
		}
		if !strings.Contains(view, wantTitle) {
			t.Errorf("%dx%d: the lesson row lacks %q:\n%s", size[0], size[1], wantTitle, view)
		}
	}
}

// TestPromptDecimalComma: a decimal comma, as typed on a European
// keyboard, is the decimal point: "95,5" saves 95.5, not 955.
func TestPromptDecimalComma(t *testing.T) {
	for _, keys := range [][]tea.KeyMsg{
		{keyRunes("9"), keyRunes("5"), keyRunes(","), keyRunes("5")},
		{keyRunes("95,5")}, // one read, or a paste
	} {
		f := askingFake()
		m := New(f)
		m.Update(sampleMsg(fixedSamples()[0]))
		press(m, append(keys, tea.KeyMsg{Type: tea.KeyEnter})...)
		if got, want := f.Calls(), []string{"Predict(step 2, 95.5)"}; !reflect.DeepEqual(got, want) {
			t.Errorf("95,5 then enter called %q, want %q", got, want)
		}
	}
}
