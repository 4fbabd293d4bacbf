package admit

import (
	"encoding/json"
	"testing"
)

func TestParsePriority(t *testing.T) {
	tests := []struct {
		in      string
		want    Priority
		wantErr bool
	}{
		{"P0", P0, false}, {"p1", P1, false}, {"2", P2, false}, {"P2", P2, false},
		{"P3", 0, true}, {"", 0, true}, {"high", 0, true}, {"-1", 0, true},
	}
	for _, tt := range tests {
		got, err := ParsePriority(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParsePriority(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if s := Priority(7).String(); s != "P?(7)" {
		t.Errorf("Priority(7).String() = %q", s)
	}
	if _, err := Priority(3).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid priority succeeded")
	}
	var p struct{ P Priority }
	if err := json.Unmarshal([]byte(`{"P":"P1"}`), &p); err != nil || p.P != P1 {
		t.Errorf("json P1 = %v, %v", p.P, err)
	}
	if err := json.Unmarshal([]byte(`{"P":"P9"}`), &p); err == nil {
		t.Error("json P9 accepted")
	}
}

func TestLevel(t *testing.T) {
	for _, l := range []Level{Green, Yellow, Red, Black} {
		got, err := ParseLevel(l.String())
		if err != nil || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
	if _, err := ParseLevel("orange"); err == nil {
		t.Error("ParseLevel(orange) succeeded")
	}
	if l, err := ParseLevel("RED"); err != nil || l != Red {
		t.Errorf("ParseLevel(RED) = %v, %v", l, err)
	}
	if s := Level(9).String(); s != "level(9)" {
		t.Errorf("Level(9).String() = %q", s)
	}
	b, err := json.Marshal(struct{ L Level }{Yellow})
	if err != nil || string(b) != `{"L":"yellow"}` {
		t.Errorf("json = %s, %v", b, err)
	}
}

// TestLevelAdmits is the shedding table: yellow sheds P2, red admits only
// P0, black admits nothing.
func TestLevelAdmits(t *testing.T) {
	want := map[Level][NumPriorities]bool{
		Green:  {true, true, true},
		Yellow: {true, true, false},
		Red:    {true, false, false},
		Black:  {false, false, false},
	}
	for l, row := range want {
		for p := Priority(0); p < NumPriorities; p++ {
			if got := l.Admits(p); got != row[p] {
				t.Errorf("%v.Admits(%v) = %v, want %v", l, p, got, row[p])
			}
		}
		if l.Admits(Priority(5)) {
			t.Errorf("%v admits an invalid priority", l)
		}
	}
	if Level(-1).Admits(P0) || Level(4).Admits(P0) {
		t.Error("an invalid level admits")
	}
}
