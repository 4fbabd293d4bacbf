package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/charmbracelet/x/term"
)

// filesMargin is the files and sockets a lab process holds besides its
// requests: listeners, scrape connections, logs, pipes to children.
const filesMargin = 1024

// NeedFiles is the open-file limit a lab process needs when the lessons
// hold up to maxOutstanding requests at once: a gateway without defenses
// holds two sockets per request (the client's and the upstream one).
func NeedFiles(maxOutstanding int) int { return 2*maxOutstanding + filesMargin }

// System is the real machine. runsDir is where runs go; hasCommand tells
// whether this binary has a subcommand; needFiles is NeedFiles of the
// lessons built into the binary.
func System(runsDir string, hasCommand func(string) bool, needFiles int) *Env {
	return &Env{
		TermSize:     terminalSize,
		Getenv:       os.Getenv,
		LookPath:     exec.LookPath,
		Listen:       net.Listen,
		NumCPU:       runtime.NumCPU(),
		LoadAvg:      func() ([3]float64, error) { return readFileWith("/proc/loadavg", parseLoadAvg) },
		MemAvailable: func() (uint64, error) { return readFileWith("/proc/meminfo", parseMemAvailable) },
		OpenFiles:    openFiles,
		NeedFiles:    needFiles,
		Executable:   os.Executable,
		HasCommand:   hasCommand,
		RunsDir:      runsDir,
		WriteProbe:   writeProbe,
	}
}

var errNoTerminal = errors.New("not a terminal")

// terminalSize is the size of the terminal on stdout, else on stdin.
func terminalSize() (int, int, error) {
	for _, f := range []*os.File{os.Stdout, os.Stdin} {
		if term.IsTerminal(f.Fd()) {
			return term.GetSize(f.Fd())
		}
	}
	return 0, 0, errNoTerminal
}

func openFiles() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	return r.Cur, nil
}

func readFileWith[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseLoadAvg reads /proc/loadavg: "0.52 0.58 0.59 1/467 12345".
func parseLoadAvg(r io.Reader) ([3]float64, error) {
	var la [3]float64
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return la, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return la, fmt.Errorf("want three load averages, got %q", strings.TrimSpace(string(b)))
	}
	for i := range la {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return la, fmt.Errorf("load average %q: not a number ≥ 0", f[i])
		}
		la[i] = v
	}
	return la, nil
}

// parseMemAvailable finds "MemAvailable:  123456 kB" in /proc/meminfo.
func parseMemAvailable(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("MemAvailable: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no MemAvailable line")
}

// writeProbe creates and removes a temporary file in dir, or, when dir
// does not exist yet, a temporary folder in its nearest existing parent
// (where `levee run` will create it).
func writeProbe(dir string) (string, error) {
	where := dir
	for {
		st, err := os.Stat(where)
		if err == nil {
			if !st.IsDir() {
				return "", fmt.Errorf("%s is a file, not a folder", where)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		parent := filepath.Dir(where)
		if parent == where {
			return "", err
		}
		where = parent
	}
	if where == dir {
		f, err := os.CreateTemp(dir, ".levee-doctor-*")
		if err != nil {
			return "", err
		}
		name := f.Name()
		f.Close()
		return dir, os.Remove(name)
	}
	tmp, err := os.MkdirTemp(where, ".levee-doctor-*")
	if err != nil {
		return "", err
	}
	if abs, err := filepath.Abs(where); err == nil {
		where = abs
	}
	return where, os.Remove(tmp)
}
