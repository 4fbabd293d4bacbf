package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"

	"github.com/levee-lab/levee/lab"
)

// keyMap holds every key binding of the dashboard. It implements
// help.KeyMap, so the help bar and the full help (?) are generated from it.
type keyMap struct {
	RateUp   key.Binding
	RateDown key.Binding
	Spike    key.Binding
	Pause    key.Binding
	Fault    key.Binding // lab.FaultKey's keys: toggle the fault whose FaultStatus.Key matches
	Defenses key.Binding
	Record   key.Binding
	Next     key.Binding
	Lessons  key.Binding // the lesson picker
	Page     key.Binding
	PrevPage key.Binding
	Help     key.Binding
	Quit     key.Binding
	// Defenses panel (active only while it is open).
	PanelUp     key.Binding
	PanelDown   key.Binding
	PanelToggle key.Binding
	PanelClose  key.Binding
	// Lesson picker (while it is open; ↑/↓ as in the defenses panel).
	PickStart key.Binding
	// Prediction prompt (while a predict step waits for a number; digits
	// go to it, other keys work as usual).
	PromptSave key.Binding
	PromptSkip key.Binding
}

func defaultKeyMap() keyMap {
	return keyMap{
		RateUp:      key.NewBinding(key.WithKeys("up", "+", "="), key.WithHelp("↑/+/=", "rate ×1.25")),
		RateDown:    key.NewBinding(key.WithKeys("down", "-", "_"), key.WithHelp("↓/-/_", "rate ÷1.25")),
		Spike:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "spike ×3 10s")),
		Pause:       key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume ramp")),
		Fault:       key.NewBinding(key.WithKeys(faultKeys()...), key.WithHelp(faultKeysHelp(0), faultHelpDesc)),
		Defenses:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "defenses")),
		Record:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "record")),
		Next:        key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next step")),
		Lessons:     key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "lessons")),
		Page:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next page")),
		PrevPage:    key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev page")),
		Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:        key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q/ctrl+c", "quit")),
		PanelUp:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "select")),
		PanelDown:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "select")),
		PanelToggle: key.NewBinding(key.WithKeys(" ", "enter"), key.WithHelp("space/enter", "toggle")),
		PanelClose:  key.NewBinding(key.WithKeys("esc", "d"), key.WithHelp("esc/d", "close")),
		PickStart:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "start lesson")),
		PromptSave:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "save guess")),
		PromptSkip:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "skip guess")),
	}
}

// faultKeys are every key lab.FaultKey hands out, in catalogue order.
func faultKeys() []string {
	var ks []string
	for i := 0; lab.FaultKey(i) != ""; i++ {
		ks = append(ks, lab.FaultKey(i))
	}
	return ks
}

const faultHelpDesc = "toggle fault"

// faultKeysHelp names the keys of a catalogue of n faults for the full
// help: "1-4", "1-9,0", "1-9,0,!" (the eleventh), "1-9,0,!@"; n ≤ 0 (not
// known yet) gives "1-9,0,!…".
func faultKeysHelp(n int) string {
	ks := faultKeys()
	switch {
	case n <= 0:
		return "1-9,0,!…"
	case n == 1:
		return ks[0]
	case n <= 9:
		return ks[0] + "-" + ks[n-1]
	}
	h := ks[0] + "-" + ks[8] + "," + ks[9]
	if n > 10 {
		h += "," + strings.Join(ks[10:min(n, len(ks))], "")
	}
	return h
}

// ShortHelp is the one-line help bar: terse labels, so it fits in 80
// columns (s, spike, is in the full help only); FullHelp has the long
// descriptions.
func (k keyMap) ShortHelp() []key.Binding {
	short := func(b key.Binding, keyText, desc string) key.Binding {
		b.SetHelp(keyText, desc)
		return b
	}
	return []key.Binding{
		short(k.RateUp, "↑↓", "rate"),
		short(k.Pause, "p", "pause"),
		short(k.Fault, "0-9!", "fault"),
		short(k.Defenses, "d", "defense"),
		short(k.Record, "r", "rec"),
		short(k.Next, "n", "next"),
		short(k.Lessons, "l", "lesson"),
		short(k.Help, "?", "help"),
		short(k.Quit, "q", "quit"),
	}
}

// FullHelp is shown by ?, grouped in columns: the widest of
// fullHelpLayouts.
func (k keyMap) FullHelp() [][]key.Binding { return k.fullHelpLayouts()[0] }

// fullHelpLayouts are the full help's layouts, widest first, each listing
// every binding: five short columns for wide terminals, three for 80
// columns, two (about 55 wide, 10 rows) for narrower ones, and one
// (about 35 wide, 20 rows) for the narrowest. fullHelpBox takes the
// first that fits.
func (k keyMap) fullHelpLayouts() [][][]key.Binding {
	return [][][]key.Binding{
		{
			{k.RateUp, k.RateDown, k.Spike, k.Pause},
			{k.Fault, k.Defenses, k.Record, k.Next},
			{k.Lessons, k.Page, k.PrevPage, k.Help, k.Quit},
			{k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose},
			{k.PickStart, k.PromptSave, k.PromptSkip},
		},
		{
			{k.RateUp, k.RateDown, k.Spike, k.Pause, k.Fault, k.Defenses, k.Record},
			{k.Next, k.Lessons, k.Page, k.PrevPage, k.Help, k.Quit},
			{k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose, k.PickStart, k.PromptSave, k.PromptSkip},
		},
		{
			{k.RateUp, k.RateDown, k.Spike, k.Pause, k.Fault, k.Defenses, k.Record, k.Next, k.Lessons, k.Page},
			{k.PrevPage, k.Help, k.Quit, k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose, k.PickStart, k.PromptSave, k.PromptSkip},
		},
		{
			{k.RateUp, k.RateDown, k.Spike, k.Pause, k.Fault, k.Defenses, k.Record, k.Next, k.Lessons, k.Page,
				k.PrevPage, k.Help, k.Quit, k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose, k.PickStart, k.PromptSave, k.PromptSkip},
		},
	}
}

// panelHelp is the help bar while the defenses panel is open.
type panelHelp keyMap

func (k panelHelp) ShortHelp() []key.Binding {
	return []key.Binding{k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose}
}

func (k panelHelp) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// pickerHelp is the help bar while the lesson picker is open.
type pickerHelp keyMap

func (k pickerHelp) ShortHelp() []key.Binding {
	return []key.Binding{k.PanelUp, k.PanelDown, k.PickStart, k.PanelClose}
}

func (k pickerHelp) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// promptHelp is the help bar while a prediction is asked for.
type promptHelp keyMap

func (k promptHelp) ShortHelp() []key.Binding {
	typing := key.NewBinding(key.WithKeys("0"), key.WithHelp("0-9 .", "type the number"))
	quit := k.Quit
	quit.SetHelp("q", "quit") // terse, as in the main bar: n fits in 80 columns
	return []key.Binding{typing, k.PromptSave, k.PromptSkip, k.Next, quit}
}

func (k promptHelp) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }
