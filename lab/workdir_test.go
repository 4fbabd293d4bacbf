package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A lab process that is SIGKILLed (or crashes, or meets the kernel's OOM
// killer) cannot remove its temporary work folder — children's logs and
// the gateways' configs with their admin token — and before, every such
// folder stayed in the temp folder for good. The next lab that opens a
// temporary work folder removes it: here a real lab process, killed.
// Folders whose owner still runs (this process's own lab), folders
// without an owner file (not a lab's) are left alone; an owner file whose
// pid now names another process (its start time differs) is stale.
func TestStaleWorkFolderRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(exe, "-test.run=^$")
	holder.Env = append(os.Environ(), holdLabEnv+"="+leveeBin)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	dead, ok := strings.CutPrefix(strings.TrimSpace(line), "workdir ")
	if err != nil || !ok {
		t.Fatalf("lab process: %q, %v", line, err)
	}
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	if _, err := os.Stat(filepath.Join(dead, "logs")); err != nil {
		t.Fatalf("the killed lab's work folder: %v", err)
	}

	foreign := filepath.Join(tmp, workPrefix+"not-a-lab")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	reused := filepath.Join(tmp, workPrefix+"pid-reused")
	start, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(reused, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(reused, workOwnerFile), fmt.Appendf(nil, "%d %d\n", os.Getpid(), start+1), 0o600); err != nil {
		t.Fatal(err)
	}

	open := func() *Lab {
		t.Helper()
		l, err := Open(context.Background(), mustParse(t, holdLabExperiment), Options{Executable: leveeBin})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = l.Stop(ctx)
		})
		return l
	}
	first := open()
	for _, d := range []string{dead, reused} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left behind by a lab that is gone", d)
		}
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("a folder without an owner file was removed: %v", err)
	}
	second := open()
	for _, l := range []*Lab{first, second} {
		if _, err := os.Stat(filepath.Join(l.workDir, "logs")); err != nil {
			t.Errorf("a running lab's work folder: %v", err)
		}
	}
	if first.workDir == second.workDir {
		t.Errorf("two labs share %s", first.workDir)
	}
}
