package doctor

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// fakeListener is a listener that holds nothing.
type fakeListener struct{ net.Listener }

func (fakeListener) Close() error { return nil }

// readyEnv is a machine every check is happy with.
func readyEnv() *Env {
	env := map[string]string{"TERM": "xterm-256color", "COLORTERM": "truecolor"}
	paths := map[string]string{"redis-server": "/usr/bin/redis-server", "tmux": "/usr/bin/tmux", "go": "/usr/local/go/bin/go"}
	return &Env{
		TermSize: func() (int, int, error) { return 160, 48, nil },
		Getenv:   func(k string) string { return env[k] },
		LookPath: func(f string) (string, error) {
			if p, ok := paths[f]; ok {
				return p, nil
			}
			return "", errors.New("not found")
		},
		Listen:       func(string, string) (net.Listener, error) { return fakeListener{}, nil },
		NumCPU:       4,
		LoadAvg:      func() ([3]float64, error) { return [3]float64{0.4, 0.5, 0.6}, nil },
		MemAvailable: func() (uint64, error) { return 8 << 30, nil },
		OpenFiles:    func() (uint64, error) { return 65536, nil },
		NeedFiles:    NeedFiles(8000),
		Executable:   func() (string, error) { return "/usr/local/bin/levee", nil },
		HasCommand:   func(string) bool { return false },
		RunsDir:      "runs",
		WriteProbe:   func(dir string) (string, error) { return dir, nil },
	}
}

func TestReadyMachine(t *testing.T) {
	r := Run(readyEnv(), Checks())
	if !r.Ready() {
		t.Fatalf("a ready machine is not ready: %+v", r)
	}
	for _, n := range r {
		if n.Status != OK || n.Fix != "" || n.Found == "" {
			t.Errorf("%s: %+v", n.Name, n.Result)
		}
	}
	if len(r) != len(Checks()) {
		t.Errorf("%d results for %d checks", len(r), len(Checks()))
	}
	var b bytes.Buffer
	if err := r.Write(&b, 0); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.Bytes())
}

// TestEachProblem breaks one thing at a time on a ready machine: the check
// that owns it says so with a fix, and no other check changes.
func TestEachProblem(t *testing.T) {
	tests := []struct {
		check   string
		status  Status
		breakIt func(e *Env)
		found   string // fragment of Found
		fix     string // fragment of Fix
	}{
		{"terminal", Fail, func(e *Env) { e.TermSize = func() (int, int, error) { return 79, 30, nil } }, "79×30: too small", "at least 80×24"},
		{"terminal", Fail, func(e *Env) { e.TermSize = func() (int, int, error) { return 100, 20, nil } }, "100×20", "at least 80×24"},
		{"terminal", Warn, func(e *Env) { e.TermSize = func() (int, int, error) { return 120, 40, nil } }, "folds its panels", "160×48"},
		{"terminal", Warn, func(e *Env) { e.TermSize = func() (int, int, error) { return 0, 0, errNoTerminal } }, "not run in a terminal", "terminal window"},
		{"colours", Fail, func(e *Env) { e.Getenv = func(string) string { return "" } }, `TERM=""`, "terminal emulator"},
		{"colours", Fail, func(e *Env) { e.Getenv = envOf("TERM", "dumb") }, `TERM="dumb"`, "xterm-256color"},
		{"colours", Warn, func(e *Env) { e.Getenv = envOf("TERM", "xterm") }, "16 colours", "export TERM=xterm-256color"},
		{"colours", Warn, func(e *Env) { e.Getenv = envOf("TERM", "xterm-256color", "NO_COLOR", "1") }, "NO_COLOR", "unset NO_COLOR"},
		{"loopback", Fail, func(e *Env) {
			n := 0
			e.Listen = func(string, string) (net.Listener, error) {
				if n++; n > 5 {
					return nil, errors.New("socket: too many open files")
				}
				return fakeListener{}, nil
			}
		}, "only 5 of 32", "allow loopback"},
		{"loopback", Warn, func(e *Env) {
			e.Listen = func(_, addr string) (net.Listener, error) {
				if addr == gatewayPort {
					return nil, errors.New("address already in use")
				}
				return fakeListener{}, nil
			}
		}, "8080 (levee gateway's default) is taken", "--listen 127.0.0.1:8081"},
		{"cpu", Warn, func(e *Env) { e.NumCPU = 1 }, "1 CPU core", "2 cores"},
		{"load", Fail, func(e *Env) { e.LoadAvg = func() ([3]float64, error) { return [3]float64{9, 9, 9}, nil } }, "load 9.00 on 4 cores", "close busy programs"},
		{"load", Warn, func(e *Env) { e.LoadAvg = func() ([3]float64, error) { return [3]float64{3, 1, 1}, nil } }, "0.75 per core", "close what you can"},
		{"load", Warn, func(e *Env) { e.LoadAvg = func() ([3]float64, error) { return [3]float64{}, errors.New("no /proc") } }, "cannot read the load", "top"},
		{"memory", Fail, func(e *Env) { e.MemAvailable = func() (uint64, error) { return 300 << 20, nil } }, "300 MiB available", "free memory"},
		{"memory", Warn, func(e *Env) { e.MemAvailable = func() (uint64, error) { return 800 << 20, nil } }, "800 MiB available: tight", "1 GiB"},
		{"memory", Warn, func(e *Env) { e.MemAvailable = func() (uint64, error) { return 0, errors.New("no /proc") } }, "cannot read the free memory", "free -h"},
		{"open files", Fail, func(e *Env) { e.OpenFiles = func() (uint64, error) { return 1024, nil } }, "limit 1024", "ulimit -n 65536"},
		{"open files", Warn, func(e *Env) { e.OpenFiles = func() (uint64, error) { return 0, errors.New("EPERM") } }, "cannot read", "ulimit -n"},
		{"runs folder", Fail, func(e *Env) {
			e.WriteProbe = func(string) (string, error) { return "", errors.New("permission denied") }
		}, "cannot write runs to runs: permission denied", "--runs DIR"},
		{"redis", Warn, func(e *Env) { e.LookPath = lookOnly("tmux", "go") }, "redis-server not found", "apt-get install -y redis-server"},
		{"go", Warn, func(e *Env) {
			e.Executable = func() (string, error) { return "/tmp/go-build123/b001/exe/levee", nil }
		}, "go run", "go build -o levee ./cmd/levee"},
	}
	for _, tt := range tests {
		t.Run(tt.check+"/"+tt.found, func(t *testing.T) {
			env := readyEnv()
			tt.breakIt(env)
			r := Run(env, Checks())
			for _, n := range r {
				if n.Name != tt.check {
					if n.Status != OK {
						t.Errorf("%s changed too: %+v", n.Name, n.Result)
					}
					continue
				}
				if n.Status != tt.status || !strings.Contains(n.Found, tt.found) || !strings.Contains(n.Fix, tt.fix) {
					t.Errorf("got %v %q / fix %q; want %v, found ⊇ %q, fix ⊇ %q", n.Status, n.Found, n.Fix, tt.status, tt.found, tt.fix)
				}
			}
			if r.Ready() != (tt.status != Fail) {
				t.Errorf("Ready() = %v with a %v", r.Ready(), tt.status)
			}
		})
	}
}

// TestRedisEmbedded: without redis-server, a binary that has `levee redis`
// is ready for lesson 06, and warns that lesson 06b (a Redis Cluster of
// redis-server children) cannot start.
func TestRedisEmbedded(t *testing.T) {
	env := readyEnv()
	env.LookPath = lookOnly("tmux")
	env.HasCommand = func(name string) bool { return name == "redis" }
	r := Run(env, []Check{{"redis", checkRedis}})
	if !r.Ready() || r[0].Status != Warn || !strings.Contains(r[0].Found, "embedded") || !strings.Contains(r[0].Found, "06b") || !strings.Contains(r[0].Fix, "redis-server") {
		t.Errorf("%+v", r[0])
	}
}

func TestNotReadyReport(t *testing.T) {
	env := readyEnv()
	env.TermSize = func() (int, int, error) { return 70, 20, nil }
	env.Getenv = envOf("TERM", "xterm")
	env.OpenFiles = func() (uint64, error) { return 1024, nil }
	r := Run(env, Checks())
	if r.Ready() {
		t.Fatal("ready with a 70×20 terminal and 1024 open files")
	}
	var b bytes.Buffer
	if err := r.Write(&b, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not ready: 2 problems (✗), 1 warning (!)") {
		t.Errorf("verdict:\n%s", b.String())
	}
	t.Run("whole", func(t *testing.T) { golden.RequireEqual(t, b.Bytes()) })
	// At 80 columns every line fits, and the words are the same.
	var w bytes.Buffer
	if err := r.Write(&w, 80); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(w.String(), "\n") {
		if n := ansi.StringWidth(line); n > 80 {
			t.Errorf("%d columns: %q", n, line)
		}
	}
	if strings.Join(strings.Fields(w.String()), " ") != strings.Join(strings.Fields(b.String()), " ") {
		t.Error("wrapping changed the words")
	}
	t.Run("80", func(t *testing.T) { golden.RequireEqual(t, w.Bytes()) })
}

// TestPanickingCheck: a check that panics is one failed line, not a crash.
func TestPanickingCheck(t *testing.T) {
	r := Run(readyEnv(), []Check{{"bad", func(*Env) Result { panic("boom") }}, {"cpu", checkCPU}})
	if len(r) != 2 || r[0].Status != Fail || !strings.Contains(r[0].Found, "boom") || r[1].Status != OK {
		t.Errorf("%+v", r)
	}
}

// TestSystem runs every check on this machine: whatever it finds, each
// line is complete and a problem always comes with a fix.
func TestSystem(t *testing.T) {
	env := System(filepath.Join(t.TempDir(), "new", "runs"), func(string) bool { return false }, NeedFiles(100))
	for _, n := range Run(env, Checks()) {
		if n.Found == "" || (n.Status != OK) != (n.Fix != "") {
			t.Errorf("%s: %+v", n.Name, n.Result)
		}
		t.Logf("%s %s: %s", n.Status.mark(), n.Name, n.Found)
	}
}

func TestParseLoadAvg(t *testing.T) {
	la, err := parseLoadAvg(strings.NewReader("0.52 1.58 2.59 1/467 12345\n"))
	if err != nil || la != [3]float64{0.52, 1.58, 2.59} {
		t.Errorf("%v %v", la, err)
	}
	for _, bad := range []string{"", "0.1 0.2", "a b c", "-1 0 0"} {
		if _, err := parseLoadAvg(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseMemAvailable(t *testing.T) {
	v, err := parseMemAvailable(strings.NewReader("MemTotal:  16000000 kB\nMemFree: 1 kB\nMemAvailable:    2048 kB\n"))
	if err != nil || v != 2048<<10 {
		t.Errorf("%v %v", v, err)
	}
	for _, bad := range []string{"MemTotal: 1 kB\n", "MemAvailable: lots kB\n", "MemAvailable: 5 MB\n"} {
		if _, err := parseMemAvailable(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWriteProbe(t *testing.T) {
	dir := t.TempDir()
	// An existing folder: written in, nothing left behind.
	if where, err := writeProbe(dir); err != nil || where != dir {
		t.Errorf("existing: %q %v", where, err)
	}
	// A folder to be created: probed in its nearest existing parent.
	want, _ := filepath.Abs(dir)
	if where, err := writeProbe(filepath.Join(dir, "a", "b", "runs")); err != nil || where != want {
		t.Errorf("new: %q %v, want %q", where, err, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v behind", left)
	}
	// Under a file: cannot be created.
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeProbe(filepath.Join(file, "runs")); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("under a file: %v", err)
	}
}

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func lookOnly(names ...string) func(string) (string, error) {
	return func(f string) (string, error) {
		for _, n := range names {
			if n == f {
				return "/usr/bin/" + f, nil
			}
		}
		return "", errors.New("not found")
	}
}
