package lab

import "testing"

func TestLevelDetail(t *testing.T) {
	for _, tc := range []struct {
		c    gatewayLevelChange
		want string
	}{
		{gatewayLevelChange{From: "green", To: "yellow", Signal: "queue_fill", Value: 0.62, Threshold: 0.5}, "gateway-1 green → yellow: queue_fill 0.62 ≥ 0.5"},
		{gatewayLevelChange{From: "red", To: "yellow"}, "gateway-1 red → yellow: every signal below its release mark"},
		{gatewayLevelChange{From: "green", To: "black", Signal: "forced"}, "gateway-1 green → black: forced"},
	} {
		if got := levelDetail(1, tc.c); got != tc.want {
			t.Errorf("levelDetail(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// observe starts a read only on a change of level, and not for the first
// sample's green.
func TestLevelLogObserve(t *testing.T) {
	var g levelLog
	g.busy = true // no read may start: a change only sets the level
	g.observe("green", false)
	g.observe("yellow", true) // stale: ignored
	if g.level != "green" {
		t.Fatalf("level %q after green and a stale yellow", g.level)
	}
	g.observe("yellow", false)
	if g.level != "yellow" {
		t.Fatalf("level %q after yellow", g.level)
	}
}
