package tui

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab"
)

// fullCatalogue gives the fake lab the real fault catalogue, each fault on
// its lab.FaultKey, as lab.Faults lists it.
func fullCatalogue(f *fakeControls) {
	f.faults = nil
	for i, name := range chaos.Default.Names() {
		f.faults = append(f.faults, lab.FaultStatus{Key: lab.FaultKey(i), Name: name})
	}
}

// TestFaultKeysDistinct: the dashboard listens to every fault's key, and
// no fault key is a key of any other binding (one press, one meaning).
func TestFaultKeysDistinct(t *testing.T) {
	k := defaultKeyMap()
	fault := map[string]bool{}
	for _, fk := range k.Fault.Keys() {
		fault[fk] = true
	}
	for i, name := range chaos.Default.Names() {
		if fk := lab.FaultKey(i); fk == "" || !fault[fk] {
			t.Errorf("fault %d (%s) is on key %q, which the dashboard does not listen to (it does: %q)", i+1, name, fk, k.Fault.Keys())
		}
	}
	if len(fault) != len(k.Fault.Keys()) {
		t.Errorf("a fault key is listed twice: %q", k.Fault.Keys())
	}
	v := reflect.ValueOf(k)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "Fault" {
			continue
		}
		for _, other := range v.Field(i).Interface().(key.Binding).Keys() {
			if fault[other] {
				t.Errorf("key %q is a fault key and %s's", other, name)
			}
		}
	}
}

// TestEleventhFaultKey: with the real catalogue, ! toggles the eleventh
// fault (redis_master_kill), the fault row shows its key, and the full
// help names it.
func TestEleventhFaultKey(t *testing.T) {
	f := newFake()
	fullCatalogue(f)
	if len(f.faults) < 11 {
		t.Fatalf("the catalogue has %d faults, want 11 or more", len(f.faults))
	}
	eleventh := f.faults[10].Name
	m := New(f)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(sampleMsg(fixedSamples()[0]))
	if v := ansi.Strip(m.View()); !strings.Contains(v, "[!] "+eleventh) {
		t.Errorf("the fault row lacks [!] %s:\n%s", eleventh, v)
	}
	press(m, keyRunes("!"))
	if got, want := f.Calls(), []string{"ToggleFault(" + eleventh + ")"}; !reflect.DeepEqual(got, want) {
		t.Errorf("! called %q, want %q", got, want)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "fault "+eleventh+": applying") || !strings.Contains(v, "[!] "+eleventh+" ●") {
		t.Errorf("after !, the view does not show %s applying and active:\n%s", eleventh, v)
	}
	press(m, keyRunes("?"))
	if v := ansi.Strip(m.View()); !strings.Contains(v, "1-9,0,! toggle fault") {
		t.Errorf("the full help does not name the fault keys 1-9,0,!:\n%s", v)
	}
}

// TestFullHelpFits: at 80×24 (and 100×30, 160×48) the full help shows
// every binding whole, for a small catalogue and the real one; so does a
// terminal narrower than two columns of keys but tall enough for one
// (below about 58 columns the descriptions of the right column were cut).
func TestFullHelpFits(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}, {160, 48}, {40, 40}, {50, 30}, {57, 36}} {
		for _, real := range []bool{false, true} {
			f := newFake()
			if real {
				fullCatalogue(f)
			}
			m := New(f)
			m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			m.Update(sampleMsg(fixedSamples()[0]))
			press(m, keyRunes("?"))
			view := m.View()
			checkFrame(t, view, size[0], size[1])
			plain := ansi.Strip(view)
			for _, col := range m.keys.FullHelp() {
				for _, b := range col {
					if h := b.Help(); !strings.Contains(plain, h.Key) || !strings.Contains(plain, h.Desc) {
						t.Errorf("%dx%d (real catalogue %t): the full help lacks %q %q:\n%s", size[0], size[1], real, h.Key, h.Desc, plain)
					}
				}
			}
			if !strings.Contains(plain, "esc closes this help") {
				t.Errorf("%dx%d: no closing hint:\n%s", size[0], size[1], plain)
			}
		}
	}
}

// TestHelpBarNarrow: below 80 columns the help bar leaves bindings out
// whole, not cut at the end, so "? help" and "q quit" always show (the
// way to the full help); the prompt's bar keeps "q quit". At 80 every
// binding of the bar shows.
func TestHelpBarNarrow(t *testing.T) {
	for _, w := range []int{40, 50, 60, 70, 79, 80} {
		for _, asking := range []bool{false, true} {
			f := newFake()
			if asking {
				f = askingFake()
			}
			m := New(f, WithLessons(fakeLessons(3), (&starter{}).start))
			m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
			m.Update(sampleMsg(fixedSamples()[0]))
			view := m.View()
			checkFrame(t, view, w, 24)
			lines := strings.Split(ansi.Strip(view), "\n")
			bar := lines[len(lines)-1]
			want := []string{"? help", "q quit"}
			if asking {
				want = []string{"quit"}
			}
			for _, s := range want {
				if !strings.Contains(bar, s) {
					t.Errorf("%d wide (prompt %t): the help bar lacks %q: %q", w, asking, s, bar)
				}
			}
			if strings.Contains(bar, "…") {
				t.Errorf("%d wide (prompt %t): a binding is cut: %q", w, asking, bar)
			}
			press(m, keyRunes("l"))
			if bar := lastLine(m.View()); !strings.Contains(bar, "enter start lesson") || !strings.Contains(bar, "close") {
				t.Errorf("%d wide: the picker's help bar lacks enter or esc: %q", w, bar)
			}
			press(m, tea.KeyMsg{Type: tea.KeyEsc}, keyRunes("d"))
			if bar := lastLine(m.View()); !strings.Contains(bar, "toggle") || !strings.Contains(bar, "close") {
				t.Errorf("%d wide: the defenses panel's help bar lacks toggle or esc: %q", w, bar)
			}
			if w == 80 && asking && !strings.Contains(bar, "n next step") {
				t.Errorf("80 wide: the prompt's help bar lacks n: %q", bar)
			}
			if w == 80 && !asking {
				for _, b := range m.keys.ShortHelp() {
					if h := b.Help(); !strings.Contains(bar, h.Key+" "+h.Desc) {
						t.Errorf("80 wide: the help bar lacks %q: %q", h.Key+" "+h.Desc, bar)
					}
				}
			}
		}
	}
}

func lastLine(view string) string {
	lines := strings.Split(ansi.Strip(view), "\n")
	return lines[len(lines)-1]
}

// TestEscClosesHelp: esc closes the full help like the other boxes; over
// the prediction prompt it closes the help only, and the next esc skips.
func TestEscClosesHelp(t *testing.T) {
	for _, asking := range []bool{false, true} {
		f := newFake()
		if asking {
			f = askingFake()
		}
		m := New(f)
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		m.Update(sampleMsg(fixedSamples()[0]))
		press(m, keyRunes("?"))
		if !strings.Contains(ansi.Strip(m.View()), "closes this help") {
			t.Fatalf("prompt %t: ? showed no full help", asking)
		}
		press(m, tea.KeyMsg{Type: tea.KeyEsc})
		if v := ansi.Strip(m.View()); strings.Contains(v, "closes this help") {
			t.Errorf("prompt %t: esc left the full help open:\n%s", asking, v)
		}
		if !asking {
			continue
		}
		if calls := f.Calls(); len(calls) != 0 {
			t.Errorf("esc over the help answered the prompt: %v", calls)
		}
		press(m, tea.KeyMsg{Type: tea.KeyEsc})
		if calls := f.Calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "Predict(") {
			t.Errorf("the second esc did not skip the prediction: %v", calls)
		}
	}
}

// TestActiveFaultPastTheFold: at 80×24 the fault row shows four faults of
// the real catalogue; a fault toggled on a later key (8) still shows as
// active, ahead of the others. Wide, the row keeps catalogue order.
func TestActiveFaultPastTheFold(t *testing.T) {
	for _, w := range []int{80, 160} {
		f := newFake()
		fullCatalogue(f)
		eighth := f.faults[7].Name
		m := New(f)
		m.Update(tea.WindowSizeMsg{Width: w, Height: 48})
		m.Update(sampleMsg(fixedSamples()[0]))
		press(m, keyRunes("8"))
		m.Update(sampleMsg(fixedSamples()[1]))
		v := ansi.Strip(m.View())
		var row string
		for _, l := range strings.Split(v, "\n") {
			if strings.HasPrefix(l, " faults") {
				row = l
			}
		}
		if !strings.Contains(row, "[8] "+eighth+" ●") {
			t.Errorf("%d wide: the fault row does not show %s active: %q", w, eighth, row)
		}
		if first := strings.Index(row, "[1] "); w == 160 && (first < 0 || first > strings.Index(row, "[8] ")) {
			t.Errorf("160 wide: the fault row left catalogue order: %q", row)
		}
	}
}

// TestFullHelpNamesEveryKey: each key a binding of the full help listens
// to is named in its help (the fault keys are a range, checked by
// TestEleventhFaultKey).
func TestFullHelpNamesEveryKey(t *testing.T) {
	names := map[string]string{"up": "↑", "down": "↓", " ": "space"}
	for _, col := range defaultKeyMap().FullHelp() {
		for _, b := range col {
			h := b.Help()
			if h.Desc == faultHelpDesc {
				continue
			}
			named := strings.Split(h.Key, "/")
			for _, k := range b.Keys() {
				if n, ok := names[k]; ok {
					k = n
				}
				if !slices.Contains(named, k) {
					t.Errorf("%q (%s) listens to %q, which its help %q does not name", h.Desc, h.Key, k, h.Key)
				}
			}
		}
	}
}
