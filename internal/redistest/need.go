package redistest

import (
	"os"
	"os/exec"
	"testing"
)

// Need skips t when redis-server is not on PATH, except under CI (the
// environment variable CI set), where that fails t: a test that starts
// Redis its own way (the lab's Redis child) checks this first.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(Binary); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not on PATH and CI is set: install it (apt-get install -y redis-server)", Binary)
		}
		t.Skipf("%s not on PATH (install it, e.g. apt-get install -y redis-server): %v", Binary, err)
	}
}
