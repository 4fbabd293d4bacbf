package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// workPrefix begins the name of a lab's temporary work folder (in
// os.TempDir()).
const workPrefix = "levee-lab-"

// workOwnerFile, in a temporary work folder, names the lab process that
// owns it: "PID START", START being when that process started (field 22
// of /proc/PID/stat, clock ticks after boot), so that another process
// given the same pid later does not pass for the owner.
const workOwnerFile = "levee-lab.owner"

// makeTempWork creates a temporary work folder owned by this process (its
// workOwnerFile written), after removing the ones labs that died without
// removing theirs (SIGKILL, a crash, the kernel's OOM killer) left
// behind; say reports each one removed. A folder without an owner file,
// or whose owner still runs, is left alone.
func makeTempWork(say func(format string, args ...any)) (string, error) {
	for _, s := range removeStaleWork(os.TempDir()) {
		say("removed %s, the work folder of a lab that ended without removing it (pid %d)", s.dir, s.pid)
	}
	d, err := os.MkdirTemp("", workPrefix)
	if err != nil {
		return "", err
	}
	pid := os.Getpid()
	start, _ := processStart(pid) // 0 where /proc cannot say: the pid alone
	owner := fmt.Sprintf("%d %d\n", pid, start)
	if err := os.WriteFile(filepath.Join(d, workOwnerFile), []byte(owner), 0o600); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// staleWork is a work folder removeStaleWork removed, and its dead owner.
type staleWork struct {
	dir string
	pid int
}

// removeStaleWork removes the lab work folders in tmp whose owner file
// names a process that no longer runs, and returns them.
func removeStaleWork(tmp string) []staleWork {
	dirs, _ := filepath.Glob(filepath.Join(tmp, workPrefix+"*"))
	var out []staleWork
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, workOwnerFile))
		if err != nil {
			continue // not a lab's, or one being made: its owner file comes next
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		start, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil || pid <= 0 || ownerRuns(pid, start) {
			continue
		}
		if os.RemoveAll(d) == nil {
			out = append(out, staleWork{dir: d, pid: pid})
		}
	}
	return out
}

// ownerRuns reports whether process pid, started at start, still runs.
// When it cannot tell (start 0: the owner could not read its own, as
// where there is no /proc), it says yes: a folder is removed only when
// its owner is known to be gone.
func ownerRuns(pid int, start uint64) bool {
	if start == 0 {
		return true
	}
	got, err := processStart(pid)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || got == start
}

// processStart reads when process pid started (field 22 of
// /proc/PID/stat). A process that does not exist is os.ErrNotExist.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses,
	// so the fields are counted after the last ')'. Field 3 (state) is
	// the first there, field 22 the twentieth.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}
