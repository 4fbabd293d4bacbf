package supervisor

import (
	"testing"
	"time"
)

// A gateway that is down has no memory: the supervisor's RSS (the
// dashboard's and the recording's gateway RSS) drops its last reading when
// it ends — after a crash as after an OOM kill — rather than showing a
// dead process's last VmRSS until the restart.
func TestRSSOfACrashedGatewayIsGone(t *testing.T) {
	h := startHelperLab(t, 2, Config{RestartDelay: time.Hour}, func(int) string { return "serve" })
	waitFor(t, 10*time.Second, "no RSS read of both gateways", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.gwRSS[0] > 0 && h.gwRSS[1] > 0
	})
	h.crash(t, h.Gateways()[0])
	waitFor(t, 5*time.Second, "the crashed gateway's RSS is still counted", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.gwRSS[0] == 0
	})
	h.mu.Lock()
	live := h.gwRSS[1]
	h.mu.Unlock()
	if live == 0 {
		t.Error("the live gateway's RSS went with the crashed one's")
	}
}
