package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildrenDieWithTheLab: a lab SIGKILLed (no Close, no deferred
// cleanup) takes its children with it — they were started with Pdeathsig
// from a thread that lives as long as the lab.
func TestChildrenDieWithTheLab(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lab := exec.Command(exe, "lab", t.TempDir())
	out, err := lab.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lab.Stderr = os.Stderr
	if err := lab.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		pid, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("lab said %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	t.Cleanup(func() { // never leave one behind, whatever the test found
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if len(pids) != 2 {
		_ = lab.Process.Kill()
		_ = lab.Wait()
		t.Fatalf("lab started children %v, want 2", pids)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("child %d not running before the lab's death", pid)
		}
	}
	_ = lab.Process.Kill()
	_ = lab.Wait()
	waitFor(t, 10*time.Second, "children outlived their SIGKILLed lab", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// alive reports whether pid runs (a zombie nobody reaped yet does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
