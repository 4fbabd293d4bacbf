package lab

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/levee-lab/levee/lab/load"
)

// Files of a run folder.
const (
	RunFile     = "run.json"
	SamplesFile = "samples.jsonl"
	EventsFile  = "events.jsonl"
	SummaryFile = "summary.json"
	ReportFile  = "report.txt" // the run alone, as `levee report DIR` prints it
	LogsDir     = "logs"
)

// Event kinds in events.jsonl.
const (
	EventRunStart     = "run_start"
	EventRunEnd       = "run_end"
	EventStage        = "stage"
	EventRate         = "rate"
	EventSpike        = "spike"
	EventRamp         = "ramp"
	EventFaultApply   = "fault_apply"
	EventFaultRevert  = "fault_revert"
	EventFaultError   = "fault_error"
	EventDefense      = "defense"
	EventOOMKill      = "oom_kill"
	EventChildStart   = "child_start"
	EventChildExit    = "child_exit"
	EventNarration    = "narration"
	EventRecordStart  = "record_start"
	EventRecordStop   = "record_stop"
	EventError        = "error"
	EventLoadFinished = "load_finished"
)

// Event is one line of events.jsonl.
type Event struct {
	Time    time.Time      `json:"t"`
	Elapsed float64        `json:"elapsed_s"` // seconds since the lab started
	Kind    string         `json:"kind"`
	Detail  string         `json:"detail,omitempty"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// RunInfo is run.json.
type RunInfo struct {
	Name       string      `json:"name"`
	Started    time.Time   `json:"started"`
	Quick      bool        `json:"quick"`
	Args       []string    `json:"args"`
	Experiment *Experiment `json:"experiment"`
	Resolved   Resolved    `json:"resolved"`
	Versions   Versions    `json:"versions"`
	Machine    Machine     `json:"machine"`
}

// Resolved is the configuration the lab actually ran with.
type Resolved struct {
	Executable    string            `json:"executable"`
	Tick          Duration          `json:"tick"`
	Nodes         []ResolvedChild   `json:"nodes"`
	Gateways      []ResolvedChild   `json:"gateways"`
	Redis         string            `json:"redis,omitempty"`
	NodeKnobs     map[string]any    `json:"node_knobs,omitempty"`
	GatewayConfig map[string]any    `json:"gateway_config,omitempty"` // generated YAML as an object (tokens removed)
	Keys          map[string]string `json:"keys"`                     // priority → API key
	LogsDir       string            `json:"logs_dir"`
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

// currentVersions reads the build info of this binary.
func currentVersions() Versions {
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

// currentMachine describes this machine.
func currentMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		m.Kernel = utsString(u.Sysname[:]) + " " + utsString(u.Release[:])
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

func utsString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// recorder writes one run folder. Samples and events are appended whole;
// summary.json is written atomically at the end.
type recorder struct {
	dir     string
	samples *jsonlWriter
	events  *jsonlWriter
	agg     *aggregator
	// baseline is the generator's totals when recording started (nil: it
	// started with the generator).
	baseline *load.Totals
	shedBase float64 // the gateways' accumulated sheds when recording started
	oomBase  int
	restBase int

	mu       sync.Mutex
	errOnce  bool // guarded by mu: one write error reported
	finished bool // guarded by mu
}

// openRecorder creates dir and its files and writes run.json.
func openRecorder(dir string, info RunInfo, agg *aggregator) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	if err := writeJSONAtomic(filepath.Join(dir, RunFile), info); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	s, err := createJSONL(filepath.Join(dir, SamplesFile))
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	e, err := createJSONL(filepath.Join(dir, EventsFile))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("events: %w", err)
	}
	return &recorder{dir: dir, samples: s, events: e, agg: agg}, nil
}

// writeError reports the first write error of this recorder on w.
func (r *recorder) writeError(err error, w io.Writer) {
	if err == nil || w == nil {
		return
	}
	r.mu.Lock()
	first := !r.errOnce
	r.errOnce = true
	r.mu.Unlock()
	if first {
		fmt.Fprintf(w, "levee: recording to %s: %v\n", r.dir, err)
	}
}

func (r *recorder) close() error {
	err1 := r.samples.Close()
	err2 := r.events.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

// copyLogs copies the children's logs from src into the run folder (for
// recordings whose children were started before recording began).
func copyLogs(src, dst string) error {
	if src == "" || filepath.Clean(src) == filepath.Clean(dst) {
		return nil
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
