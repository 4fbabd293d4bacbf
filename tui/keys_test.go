package tui

import (
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab"
)

func keyRunes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// press sends keys to m through Update and runs any command that is not a
// Samples wait (Stop), feeding its message back, like the program would.
func press(m *Model, keys ...tea.KeyMsg) (quit bool) {
	for _, k := range keys {
		_, cmd := m.Update(k)
		for cmd != nil {
			msg := cmd()
			if _, ok := msg.(tea.QuitMsg); ok {
				return true
			}
			_, cmd = m.Update(msg)
		}
	}
	return false
}

// Recording writes files: r only returns a command, and the files are
// written when the program runs it, off the UI goroutine.
func TestRecordRunsOffTheUIGoroutine(t *testing.T) {
	f := newFake()
	m := New(f)
	_, cmd := m.Update(keyRunes("r"))
	if len(f.Calls()) != 0 || cmd == nil {
		t.Fatalf("r called %v on the UI goroutine (command %v)", f.Calls(), cmd != nil)
	}
	if _, again := m.Update(keyRunes("r")); again != nil || !strings.Contains(ansi.Strip(m.View()), "still busy") {
		t.Error("a second r while the first runs started another command")
	}
	_, _ = m.Update(cmd())
	if calls := f.Calls(); len(calls) != 1 || calls[0] != "StartRecording()" || !strings.Contains(ansi.Strip(m.View()), "recording to") {
		t.Errorf("after the command: calls %v, view %q", calls, ansi.Strip(m.View()))
	}
}

// stoppedLab is a fake lab whose lesson ended: it refuses controls that
// change the run and has closed its Samples channel.
func stoppedLab(f *fakeControls) {
	f.finishing = true
	close(f.ch)
}

func TestKeyBindings(t *testing.T) {
	tests := []struct {
		name      string
		keys      []tea.KeyMsg
		setup     func(f *fakeControls)
		wantCalls []string
		wantView  string // substring of the view afterwards
		notView   string // not in the view afterwards
		wantQuit  bool
	}{
		{name: "up raises rate ×1.25", keys: []tea.KeyMsg{{Type: tea.KeyUp}}, wantCalls: []string{"SetRate(125.00)"}, wantView: "target rate 125/s"},
		{name: "+ raises rate", keys: []tea.KeyMsg{keyRunes("+")}, wantCalls: []string{"SetRate(125.00)"}},
		{name: "down lowers rate ÷1.25", keys: []tea.KeyMsg{{Type: tea.KeyDown}}, wantCalls: []string{"SetRate(80.00)"}, wantView: "target rate 80/s"},
		{name: "- lowers rate", keys: []tea.KeyMsg{keyRunes("-")}, wantCalls: []string{"SetRate(80.00)"}},
		{name: "up from 0 goes to 1/s", setup: func(f *fakeControls) { f.rate = 0 },
			keys: []tea.KeyMsg{{Type: tea.KeyUp}}, wantCalls: []string{"SetRate(1.00)"}, wantView: "target rate 1.0/s"},
		{name: "up near the maximum goes to it", setup: func(f *fakeControls) { f.rate = 900_000 },
			keys: []tea.KeyMsg{{Type: tea.KeyUp}}, wantCalls: []string{"SetRate(1000000.00)"}, wantView: "target rate 1.0M/s"},
		{name: "a refused rate shows in status", setup: func(f *fakeControls) { f.failNext = errFake },
			keys: []tea.KeyMsg{{Type: tea.KeyUp}}, wantCalls: []string{"SetRate(125.00)"}, wantView: "rate unchanged: admin API said no"},
		{name: "s spikes ×3 for 10s", keys: []tea.KeyMsg{keyRunes("s")}, wantCalls: []string{"Spike(3, 10s)"}, wantView: "spike ×3"},
		{name: "p pauses the ramp", keys: []tea.KeyMsg{keyRunes("p")}, wantCalls: []string{"PauseRamp(true)"}, wantView: "ramp paused"},
		{name: "p resumes a paused ramp", setup: func(f *fakeControls) { f.paused = true },
			keys: []tea.KeyMsg{keyRunes("p")}, wantCalls: []string{"PauseRamp(false)"}, wantView: "ramp resumed"},
		{name: "1 toggles the fault on key 1", keys: []tea.KeyMsg{keyRunes("1")}, wantCalls: []string{"ToggleFault(node_kill)"}, wantView: "[1] node_kill ●"},
		{name: "3 toggles the fault on key 3", keys: []tea.KeyMsg{keyRunes("3")}, wantCalls: []string{"ToggleFault(gc_pressure)"}, wantView: "fault gc_pressure: applying"},
		{name: "pressing 2 twice reverts", keys: []tea.KeyMsg{keyRunes("2"), keyRunes("2")},
			wantCalls: []string{"ToggleFault(model_latency)", "ToggleFault(model_latency)"}, wantView: "fault model_latency: reverting"},
		{name: "9 without a fault says so", keys: []tea.KeyMsg{keyRunes("9")}, wantView: "no fault on key 9"},
		{name: "0 toggles a tenth fault", setup: func(f *fakeControls) { f.faults = append(f.faults, lab.FaultStatus{Key: "0", Name: "redis_down"}) },
			keys: []tea.KeyMsg{keyRunes("0")}, wantCalls: []string{"ToggleFault(redis_down)"}, wantView: "fault redis_down: applying"},
		{name: "fault error shows in status", setup: func(f *fakeControls) { f.failNext = errFake },
			keys: []tea.KeyMsg{keyRunes("1")}, wantCalls: []string{"ToggleFault(node_kill)"}, wantView: "fault node_kill: admin API said no"},
		{name: "an unavailable fault is not toggled and says why", keys: []tea.KeyMsg{keyRunes("4")},
			wantView: "fault redis_outage is unavailable here: no Redis in this lab"},
		{name: "an unavailable fault is marked n/a", wantView: "[4] redis_outage n/a"},
		{name: "a fault that failed on the lab's goroutine is marked", setup: func(f *fakeControls) { f.faults[1].Error = "apply failed: node 2 is down" },
			wantView: "[2] model_latency ⚠ failed"},
		{name: "a fault's failure is on the status line", setup: func(f *fakeControls) { f.faults[1].Error = "apply failed: down" },
			wantView: "fault model_latency: apply failed: down"},
		{name: "d opens the defenses panel", keys: []tea.KeyMsg{keyRunes("d")}, wantView: "[x] ratelimit"},
		{name: "d, space toggles the first defense", keys: []tea.KeyMsg{keyRunes("d"), {Type: tea.KeySpace, Runes: []rune(" ")}},
			wantCalls: []string{"SetDefense(ratelimit, false)"}, wantView: "[ ] ratelimit"},
		{name: "d, down, down, enter toggles bulkhead", keys: []tea.KeyMsg{keyRunes("d"), {Type: tea.KeyDown}, {Type: tea.KeyDown}, {Type: tea.KeyEnter}},
			wantCalls: []string{"SetDefense(bulkhead, false)"}, wantView: "defense bulkhead off"},
		{name: "d, up stays on top, retry turns on", keys: []tea.KeyMsg{keyRunes("d"), {Type: tea.KeyUp}, keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"), {Type: tea.KeyEnter}},
			wantCalls: []string{"SetDefense(retry, true)"}, wantView: "defense retry on"},
		{name: "arrows in the panel do not change the rate", keys: []tea.KeyMsg{keyRunes("d"), {Type: tea.KeyDown}, {Type: tea.KeyUp}, {Type: tea.KeyEsc}}},
		{name: "esc closes the panel", keys: []tea.KeyMsg{keyRunes("d"), {Type: tea.KeyEsc}, {Type: tea.KeyUp}},
			wantCalls: []string{"SetRate(125.00)"}},
		{name: "defense error shows in status", setup: func(f *fakeControls) { f.failNext = errFake },
			keys: []tea.KeyMsg{keyRunes("d"), {Type: tea.KeyEnter}}, wantCalls: []string{"SetDefense(ratelimit, false)"}, wantView: "defense ratelimit: admin API said no"},
		{name: "r starts recording and shows the folder", keys: []tea.KeyMsg{keyRunes("r")},
			wantCalls: []string{"StartRecording()"}, wantView: "recording to runs/20261130-091500-default"},
		{name: "r twice stops recording", keys: []tea.KeyMsg{keyRunes("r"), keyRunes("r")},
			wantCalls: []string{"StartRecording()", "StopRecording()"}, wantView: "recording stopped"},
		{name: "recording error shows in status", setup: func(f *fakeControls) { f.failNext = errFake },
			keys: []tea.KeyMsg{keyRunes("r")}, wantCalls: []string{"StartRecording()"}, wantView: "start recording: admin API said no"},
		{name: "n shows the next lesson step", keys: []tea.KeyMsg{keyRunes("n")}, wantCalls: []string{"NextStep()"}, wantView: "step 3/5 · WATCH"},
		{name: "tab flips the page", keys: []tea.KeyMsg{{Type: tea.KeyTab}}, wantView: "page 2/2"},
		{name: "shift+tab flips back", keys: []tea.KeyMsg{{Type: tea.KeyShiftTab}}, wantView: "page 2/2"},
		// After the lesson ended the lab refuses what would change the run;
		// the status line says so instead of reporting a change.
		{name: "+ after the lab stopped says so", setup: stoppedLab, keys: []tea.KeyMsg{keyRunes("+")},
			wantCalls: []string{"SetRate(125.00)"}, wantView: "✕ rate unchanged: lab: stopping", notView: "target rate"},
		{name: "- after the lab stopped says so", setup: stoppedLab, keys: []tea.KeyMsg{keyRunes("-")},
			wantCalls: []string{"SetRate(80.00)"}, wantView: "✕ rate unchanged: lab: stopping", notView: "target rate"},
		{name: "s after the lab stopped says so", setup: stoppedLab, keys: []tea.KeyMsg{keyRunes("s")},
			wantCalls: []string{"Spike(3, 10s)"}, wantView: "✕ no spike: lab: stopping", notView: "spike ×3"},
		{name: "p after the lab stopped says so", setup: stoppedLab, keys: []tea.KeyMsg{keyRunes("p")},
			wantCalls: []string{"PauseRamp(true)"}, wantView: "✕ ramp unchanged: lab: stopping", notView: "ramp paused"},
		{name: "a fault key after the lab stopped says so", setup: stoppedLab, keys: []tea.KeyMsg{keyRunes("1")},
			wantCalls: []string{"ToggleFault(node_kill)"}, wantView: "✕ fault node_kill: lab: stopping"},
		{name: "n after the lab stopped says so", setup: stoppedLab, keys: []tea.KeyMsg{keyRunes("n")},
			wantCalls: []string{"NextStep()"}, wantView: "✕ no next step: lab: stopping", notView: "step 3/5"},
		{name: "n at the last step says so", setup: func(f *fakeControls) { f.lesson.Step = f.lesson.Steps },
			keys: []tea.KeyMsg{keyRunes("n")}, wantCalls: []string{"NextStep()"}, wantView: "✕ no next step: step 5/5 is the last", notView: "no next step: lab:"},
		{name: "? shows full help", keys: []tea.KeyMsg{keyRunes("?")}, wantView: "esc closes this help"},
		{name: "q stops the lab with a deadline and quits", keys: []tea.KeyMsg{keyRunes("q")},
			wantCalls: []string{"Stop(deadline=true)"}, wantQuit: true},
		{name: "ctrl+c stops the lab and quits", keys: []tea.KeyMsg{{Type: tea.KeyCtrlC}},
			wantCalls: []string{"Stop(deadline=true)"}, wantQuit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			if tt.setup != nil {
				tt.setup(f)
			}
			m := New(f)
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
			m.Update(sampleMsg(fixedSamples()[0]))
			quit := press(m, tt.keys...)
			if quit != tt.wantQuit {
				t.Errorf("quit = %t, want %t", quit, tt.wantQuit)
			}
			if got := f.Calls(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %q, want %q", got, tt.wantCalls)
			}
			view := ansi.Strip(m.View())
			if tt.wantView != "" && !strings.Contains(view, tt.wantView) {
				t.Errorf("view lacks %q:\n%s", tt.wantView, view)
			}
			if tt.notView != "" && strings.Contains(view, tt.notView) {
				t.Errorf("view shows %q:\n%s", tt.notView, view)
			}
			checkFrame(t, m.View(), 80, 24)
		})
	}
}

// TestQuitShowsStopping checks that the screen says "stopping…" while
// Controls.Stop runs, and that Stop's error is shown, not a crash.
func TestQuitShowsStopping(t *testing.T) {
	f := newFake()
	f.failNext = errFake
	m := New(f)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	_, cmd := m.Update(keyRunes("q"))
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "stopping…") {
		t.Fatalf("view while stopping lacks stopping…:\n%s", v)
	}
	// Keys other than quit do nothing while stopping.
	m.Update(keyRunes("s"))
	msg := cmd()
	_, cmd = m.Update(msg)
	if cmd == nil {
		t.Fatal("no quit after Stop returned")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("Stop's return did not quit")
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "stop: admin API said no") {
		t.Errorf("Stop error not shown:\n%s", v)
	}
	if got, want := f.Calls(), []string{"Stop(deadline=true)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

// TestKeyMapHelp checks every binding of the keyMap is listed in each
// layout of the full help, and that the short help fits in 80 columns.
func TestKeyMapHelp(t *testing.T) {
	k := defaultKeyMap()
	for n, layout := range k.fullHelpLayouts() {
		listed := map[string]bool{}
		for _, col := range layout {
			for _, b := range col {
				listed[b.Help().Key+" "+b.Help().Desc] = true
			}
		}
		v := reflect.ValueOf(k)
		for i := 0; i < v.NumField(); i++ {
			b := v.Field(i).Interface().(key.Binding)
			if !listed[b.Help().Key+" "+b.Help().Desc] {
				t.Errorf("binding %s (%q) is missing from full help layout %d", v.Type().Field(i).Name, b.Help().Key, n)
			}
		}
	}
	h := newHelp()
	if w := ansi.StringWidth(h.ShortHelpView(k.ShortHelp())); w > 80 {
		t.Errorf("short help is %d cells wide, want ≤ 80", w)
	}
}

// TestKeysInOneRead: keys that reach the program in one read come as one
// KeyRunes message; each is handled as if pressed alone, in order, and
// digits still go to an open prediction prompt.
func TestKeysInOneRead(t *testing.T) {
	f := newFake()
	m := New(f)
	m.Update(sampleMsg(fixedSamples()[0]))
	press(m, keyRunes("++"), keyRunes("1s"))
	want := []string{"SetRate(125.00)", "SetRate(156.25)", "ToggleFault(node_kill)", "Spike(3, 10s)"}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("keys in one read called %q, want %q", got, want)
	}

	f = askingFake()
	m = New(f)
	m.Update(sampleMsg(fixedSamples()[0]))
	press(m, keyRunes("95"), tea.KeyMsg{Type: tea.KeyEnter})
	if got := f.Calls(); len(got) != 1 || !strings.Contains(got[0], "95") {
		t.Errorf("95 typed in one read then enter called %q, want a prediction of 95", got)
	}
}

// TestBoxKeysOutsideBoxes: the keys the full help lists for the defenses
// panel, the lesson picker and the prediction prompt say where they work
// when pressed with none of those open, and call nothing.
func TestBoxKeysOutsideBoxes(t *testing.T) {
	for _, tt := range []struct {
		name string
		k    tea.KeyMsg
	}{
		{"k", keyRunes("k")}, {"j", keyRunes("j")}, {"space", tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")}},
		{"enter", tea.KeyMsg{Type: tea.KeyEnter}}, {"esc", tea.KeyMsg{Type: tea.KeyEsc}},
	} {
		f := newFake()
		m := New(f)
		m.Update(sampleMsg(fixedSamples()[0]))
		press(m, tt.k)
		if v := ansi.Strip(m.View()); !strings.Contains(v, " "+tt.name+": nothing here to select") {
			t.Errorf("%s with no box open said nothing:\n%s", tt.name, v)
		}
		if calls := f.Calls(); len(calls) != 0 {
			t.Errorf("%s with no box open called %v", tt.name, calls)
		}
	}
}

// TestBarWhileStopping: while the lab stops every key but quit is
// ignored, so the help bar shows only what a second quit does; while a
// lesson starts, only quit.
func TestBarWhileStopping(t *testing.T) {
	for _, kill := range []bool{false, true} {
		var opts []Option
		want := "again: stop waiting for the lab"
		if kill {
			opts = append(opts, WithKill(func() {}))
			want = "again: kill every child process now"
		}
		m := New(newFake(), opts...)
		m.Update(sampleMsg(fixedSamples()[0]))
		m.Update(keyRunes("q")) // Stop's command is not run: the lab is stopping
		bar := lastLine(m.View())
		if !strings.Contains(bar, want) || strings.Contains(bar, "rate") {
			t.Errorf("kill %t: the help bar while stopping is %q, want only %q", kill, bar, want)
		}
	}
	m := New(newFake(), WithLessons(fakeLessons(3), (&starter{}).start))
	m.Update(sampleMsg(fixedSamples()[0]))
	m.Update(keyRunes("l"))
	m.Update(tea.KeyMsg{Type: tea.KeyEnter}) // the switch's command is not run
	if bar := lastLine(m.View()); !strings.Contains(bar, "quit") || strings.Contains(bar, "rate") {
		t.Errorf("the help bar while a lesson starts is %q, want only quit", bar)
	}
}
