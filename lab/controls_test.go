package lab

import (
	"testing"

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
