package lab

import (
	"context"
	"testing"
	"time"

	"github.com/levee-lab/levee/chaos"
)

// TestFaultKey: every fault of the catalogue has a key of its own (the
// eleventh, redis_master_kill, included), in the dashboard's order.
func TestFaultKey(t *testing.T) {
	names := chaos.Default.Names()
	seen := map[string]string{}
	for i, name := range names {
		k := FaultKey(i)
		if k == "" {
			t.Errorf("fault %d (%s) has no key", i+1, name)
			continue
		}
		if other, dup := seen[k]; dup {
			t.Errorf("key %q is both %s's and %s's", k, other, name)
		}
		seen[k] = name
	}
	for i, want := range map[int]string{0: "1", 8: "9", 9: "0", 10: "!", 11: "@", 19: ")", 20: "", -1: ""} {
		if got := FaultKey(i); got != want {
			t.Errorf("FaultKey(%d) = %q, want %q", i, got, want)
		}
	}
	if len(names) < 11 || names[10] != "redis_master_kill" || seen["!"] != "redis_master_kill" {
		t.Errorf("the eleventh fault, redis_master_kill, is not on key !: %q", names)
	}
}

// Defense switches pressed in quick succession end with the gateways in
// the state the lab reports (and the dashboard shows, from Defenses): each
// switch's admin call ran on its own goroutine, and they reached the
// gateway in any order — after 7 quick toggles of guard, the gateway was
// left in the other state in 10 rounds of 30.
func TestQuickDefenseTogglesEndInTheLabsState(t *testing.T) {
	exp := foreverLab(t, "defenses", 20, 20, "")
	l := openLab(t, exp, Options{RunsDir: t.TempDir()})
	gatewayGuard := func() bool {
		t.Helper()
		var st struct {
			Defenses map[string]bool `json:"defenses"`
		}
		if err := l.sup.GatewayState(context.Background(), 0, &st); err != nil {
			t.Fatal(err)
		}
		return st.Defenses["guard"]
	}
	for round := range 30 {
		for i := range 7 {
			if err := l.SetDefense("guard", (i+round)%2 == 0); err != nil {
				t.Fatal(err)
			}
		}
		want := l.Defenses()["guard"]
		// Once every switch has reached the gateway nothing changes its
		// state again: it ends at the lab's state, or never does.
		deadline := time.Now().Add(5 * time.Second)
		for gatewayGuard() != want {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the gateway's guard is %t, the lab's %t", round, !want, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
