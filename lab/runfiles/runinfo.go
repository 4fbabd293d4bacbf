package runfiles

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/levee-lab/levee/lab/experiment"
)

// Event is one line of events.jsonl.
type Event struct {
	Time    time.Time      `json:"t"`
	Elapsed float64        `json:"elapsed_s"` // seconds since the lab started
	Kind    string         `json:"kind"`
	Detail  string         `json:"detail,omitempty"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// ReadRunInfo reads dir's run.json. No run.json is an error wrapping
// fs.ErrNotExist; one that does not decode is an error naming the file;
// and so is an experiment in it that fails the checks an experiment file
// gets (experiment.Experiment.Normalize, what `levee run` checks a file
// with), naming the run folder and the field: the stored experiment is
// the run's setup read back (levee plan sizes it), and a bad one — a
// negative mix weight — would skew every figure taken from it without a
// word. The experiment comes back normalized (its defaults filled).
func ReadRunInfo(dir string) (*RunInfo, error) {
	path := filepath.Join(dir, RunFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("run folder %s: %w", dir, err)
	}
	var info RunInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if info.Experiment != nil {
		if err := info.Experiment.Normalize(); err != nil {
			return nil, fmt.Errorf("run folder %s: %s: the experiment it holds: %w", dir, RunFile, err)
		}
	}
	return &info, nil
}

// RunInfo is run.json.
type RunInfo struct {
	Name       string                 `json:"name"`
	Started    time.Time              `json:"started"`
	Quick      bool                   `json:"quick"`
	Args       []string               `json:"args"`
	Experiment *experiment.Experiment `json:"experiment"`
	Resolved   Resolved               `json:"resolved"`
	Versions   Versions               `json:"versions"`
	Machine    Machine                `json:"machine"`
}

// Resolved is the configuration the lab actually ran with.
type Resolved struct {
	Executable    string              `json:"executable"`
	Tick          experiment.Duration `json:"tick"`
	Nodes         []ResolvedChild     `json:"nodes"`
	Gateways      []ResolvedChild     `json:"gateways"`
	Redis         string              `json:"redis,omitempty"`
	NodeKnobs     map[string]any      `json:"node_knobs,omitempty"`
	GatewayConfig map[string]any      `json:"gateway_config,omitempty"` // generated YAML as an object (tokens removed)
	Keys          map[string]string   `json:"keys"`                     // priority → API key
	LogsDir       string              `json:"logs_dir"`
}

// ResolvedChild is one child process.
type ResolvedChild struct {
	Name   string `json:"name"`
	Listen string `json:"listen"`
	Admin  string `json:"admin,omitempty"`
	PID    int    `json:"pid"`
	Log    string `json:"log"`
}

// Versions are the build's versions.
type Versions struct {
	Go       string            `json:"go"`
	Module   string            `json:"module"`
	Version  string            `json:"version"`
	Revision string            `json:"vcs_revision,omitempty"`
	Modified string            `json:"vcs_modified,omitempty"`
	Deps     map[string]string `json:"deps,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemBytes   uint64 `json:"mem_bytes"`
	Kernel     string `json:"kernel"`
	CPUModel   string `json:"cpu_model,omitempty"`
}

// CurrentVersions reads the build info of this binary.
func CurrentVersions() Versions {
	v := Versions{Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Version = bi.Main.Path, bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value
		}
	}
	v.Deps = map[string]string{}
	for _, d := range bi.Deps {
		v.Deps[d.Path] = d.Version
	}
	return v
}

// CurrentMachine describes this machine.
func CurrentMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if fs := strings.Fields(rest); len(fs) == 2 {
					if kb, err := strconv.ParseUint(fs[0], 10, 64); err == nil {
						m.MemBytes = kb * 1024
					}
				}
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
		f.Close()
	}
	return m
}
