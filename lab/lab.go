package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/supervisor"
)

// Options are how Open runs an experiment: where its files go, whether it
// records from the start, and the binary and clock it uses.
type Options struct {
	// Executable is the levee binary re-executed for every child (nodes,
	// gateways). Default: os.Executable(). Tests set a binary they built.
	Executable string
	// Record records from the start, as `levee run` does, into Out (or
	// RunsDir/<time>-<name>).
	Record bool
	// Out is the run folder when Record is set ("" = RunsDir/<time>-<name>).
	// A folder that holds files is refused unless Force.
	Out string
	// Force replaces a previous run in Out (its files are removed first).
	Force bool
	// RunsDir is where run folders go. Default "runs".
	RunsDir string
	// WorkDir holds the children's logs and configs when not recording from
	// the start. Default: a new temporary folder (levee-lab-* in
	// os.TempDir()), removed by Stop and Kill; one a lab that died left
	// (SIGKILL, a crash) is removed by the next lab that opens one.
	WorkDir string
	// Quick time-scales the experiment to about 20 s (Experiment.Quick).
	Quick bool
	// Args is the command line, kept in run.json.
	Args []string
	// Progress receives human progress lines (nil: none). When it also
	// implements ErrorWriter, the lines that report a failure go to its
	// WriteError instead of Write.
	Progress io.Writer
	// ReadyTimeout bounds each child's start. Default 20 s.
	ReadyTimeout time.Duration
	// Reports are written into every recording's folder when it ends,
	// after report.txt (an HTML report, for instance).
	Reports []runfiles.ReportWriter
	// Clock drives the experiment's schedule (stages, faults, narration,
	// end), the load generator's arrivals and the sampling ticks. Default:
	// the real clock.
	Clock clockwork.Clock
}

// Lab is a running experiment: it wires the supervisor (child processes),
// the load generator, the chaos controller playing the experiment's
// timeline, the sampler and, when recording, the recorder. It implements
// Controls. Create it with Open; Wait returns when the experiment ends (or
// Stop was called) and everything is torn down.
type Lab struct {
	exp     *experiment.Experiment
	opts    Options
	clock   clockwork.Clock
	exe     string
	token   string
	keys    map[string]string
	workDir string // children logs and configs
	tmpWork bool   // workDir is ours to remove
	logsDir string

	ctx    context.Context // lives until teardown finishes
	cancel context.CancelFunc
	// stepCtx bounds the timeline's fault steps: Kill cancels it, so that
	// a step under way (a restart waiting for readiness) ends at once.
	stepCtx    context.Context
	stepCancel context.CancelFunc
	// timelineDone is closed when the timeline worker has returned: the
	// end sequence waits for the step under way, whose failure belongs in
	// the summary.
	timelineDone chan struct{}

	sup      *supervisor.Supervisor
	gen      *load.Generator
	loadStop context.CancelFunc
	loadDone chan struct{}
	ctl      *chaos.Controller
	sched    *schedule
	narr     narration
	latest   atomic.Pointer[runfiles.Sample] // the newest Sample
	sampling *sampling
	subs     subscribers
	recs     recordings
	stopOnce sync.Once
	done     chan struct{} // closed when torn down
	// ending is closed when the end sequence begins (Stop, or the
	// experiment's end): the controls refuse from then on.
	ending chan struct{}
	// finishing is closed once load has finished and the last sample is
	// taken, before the children stop.
	finishing chan struct{}

	// defenseMu is held while one defense switch is sent to the gateways.
	defenseMu sync.Mutex

	mu sync.Mutex
	// guarded by mu:
	start     time.Time // when load started; Sample.Elapsed counts from here
	defenses  map[string]bool
	waitErr   error
	endReason string // why the run ended ("done", "stopped"); "" while it runs
	timers    []clockwork.Timer
	envDone   bool // the end sequence cancelled every pending After
	// faultErrs holds, per fault, why its last apply or revert failed; a
	// later success clears it.
	faultErrs map[string]string
	// stepErrs are the experiment's fault steps that failed, in order
	// (FaultStepErrors).
	stepErrs []error
}

var _ Controls = (*Lab)(nil)
var _ chaos.Env = (*Lab)(nil)

// Open starts the experiment: Redis if asked, the model nodes, the
// gateways, then load, faults and sampling. It returns once every child is
// ready and load has started; on error everything started is stopped.
func Open(ctx context.Context, exp *experiment.Experiment, opts Options) (*Lab, error) {
	l, runDir, err := newLab(exp, opts)
	if err != nil {
		return nil, err
	}
	if runDir != "" {
		// The recorder opens before any child so that child_start events land.
		info := runfiles.RunInfo{Name: l.exp.Name, Started: time.Now().UTC(), Quick: opts.Quick, Args: opts.Args, Experiment: l.exp, Versions: runfiles.CurrentVersions(), Machine: runfiles.CurrentMachine()}
		if err := l.recs.open(runDir, info, nil, l.recorderOptions()...); err != nil {
			l.abort(err)
			return nil, fmt.Errorf("lab: %w", err)
		}
	}
	l.start = l.clock.Now() // provisional, reset when load starts
	if err := l.startChildren(ctx); err != nil {
		l.abort(err)
		return nil, err
	}
	if err := l.startLoad(); err != nil {
		l.abort(err)
		return nil, err
	}
	return l, nil
}

// newLab normalizes the experiment, resolves the options and makes the
// folders; it returns the run folder when recording from the start.
func newLab(exp *experiment.Experiment, opts Options) (*Lab, string, error) {
	if exp == nil {
		return nil, "", errors.New("lab: no experiment")
	}
	e := exp.Clone()
	if err := e.Normalize(); err != nil {
		return nil, "", fmt.Errorf("lab: experiment %s: %w", e.Name, err)
	}
	if opts.Quick {
		e = e.Quick()
	}
	exe := opts.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, "", fmt.Errorf("lab: find own binary: %w", err)
		}
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 20 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	l := &Lab{
		exp: e, opts: opts, clock: opts.Clock, exe: exe, token: randomToken(),
		done: make(chan struct{}), ending: make(chan struct{}), finishing: make(chan struct{}),
		defenses: map[string]bool{}, faultErrs: map[string]string{},
	}
	l.sched = newSchedule(e, l.clock)
	l.narr.init()
	l.subs.init()
	l.keys = experiment.APIKeys(l.token)
	for k, v := range e.Gateway.Defenses {
		l.defenses[k] = v
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.stepCtx, l.stepCancel = context.WithCancel(l.ctx)
	l.timelineDone = make(chan struct{})
	runDir, err := l.makeFolders()
	if err != nil {
		l.cancel()
		return nil, "", err
	}
	return l, runDir, nil
}

// makeFolders picks the work folder (the run folder when recording from the
// start) and makes its logs folder.
func (l *Lab) makeFolders() (runDir string, err error) {
	switch {
	case l.opts.Record:
		d, err := runfiles.ResolveRunDir(l.opts.Out, l.opts.RunsDir, l.exp.Name, time.Now(), l.opts.Force)
		if err != nil {
			return "", err
		}
		runDir, l.workDir = d, d
	case l.opts.WorkDir != "":
		l.workDir = l.opts.WorkDir
	default:
		d, err := makeTempWork(l.progress)
		if err != nil {
			return "", fmt.Errorf("lab: work folder: %w", err)
		}
		l.workDir, l.tmpWork = d, true
	}
	l.logsDir = filepath.Join(l.workDir, runfiles.LogsDir)
	if err := os.MkdirAll(l.logsDir, 0o755); err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	return runDir, nil
}

// abort undoes a failed Open: it stops the lab's goroutines and every
// child, records why in events.jsonl, and removes a temporary work folder.
func (l *Lab) abort(err error) {
	close(l.ending)
	close(l.finishing)
	if l.sup != nil {
		l.sup.Close()
	}
	l.recs.abort(err)
	l.cancel()
	if l.tmpWork {
		os.RemoveAll(l.workDir)
	}
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startChildren starts Redis (when asked), the nodes, then the gateways.
func (l *Lab) startChildren(ctx context.Context) error {
	e := l.exp
	limit := uint64(0)
	if mb := e.Gateway.MemoryLimitMB; mb > 0 {
		limit = uint64(mb * (1 << 20))
	}
	sup, err := supervisor.Start(ctx, supervisor.Config{
		Executable: l.exe, Token: l.token, LogsDir: l.logsDir, WorkDir: l.workDir,
		ReadyTimeout: l.opts.ReadyTimeout,
		Nodes:        e.Nodes.Count, NodeKnobs: e.Nodes.Knobs, NodeMaxTokens: e.Nodes.MaxTokens,
		Gateways: e.Gateway.Count, GatewayConfig: l.gatewayConfig,
		MemoryLimit: limit, RestartDelay: e.Gateway.RestartDelay.D(),
		Redis: e.Redis, Event: l.event, Progress: l.progress, Failure: l.progressErr,
	})
	if err != nil {
		return err
	}
	l.sup = sup
	return nil
}

// gatewayConfig is the YAML config of one gateway, built as a typed
// gateway.Config with the defenses in force now.
func (l *Lab) gatewayConfig(listen, admin string, nodes []string, redisURL string) ([]byte, error) {
	_, doc, err := l.exp.GatewayConfig(experiment.GatewayParams{
		Listen: listen, Admin: admin, Token: l.token, Nodes: nodes, Keys: l.keys,
		Defenses: l.Defenses(), RedisURL: redisURL, Gateways: l.exp.Gateway.Count,
	})
	return doc, err
}

// startLoad creates the generator, the fault controller and the sampler,
// then starts load, sampling and the schedule.
func (l *Lab) startLoad() error {
	e := l.exp
	targets := make([]string, 0, len(l.sup.Gateways()))
	for _, g := range l.sup.Gateways() {
		targets = append(targets, "http://"+g.Listen())
	}
	gen, err := load.New(load.Config{
		Targets: targets,
		Mix: load.Mix{
			Priorities:       e.Mix.Priorities,
			Keys:             l.keys,
			Routes:           e.Mix.Routes,
			RoutesByPriority: e.Mix.RoutesByPriority,
			PromptTokens:     [2]int{e.Mix.PromptTokens.Min, e.Mix.PromptTokens.Max},
			MaxTokens:        e.Mix.MaxTokens,
			AgentSteps:       [2]int{e.Mix.AgentSteps.Min, e.Mix.AgentSteps.Max},
		},
		Arrival:        e.Arrival,
		ClientTimeout:  e.ClientTimeout.D(),
		MaxOutstanding: e.MaxOutstanding,
		Seed:           e.Seed,
		Retry:          e.ClientRetry.Policy(),
		Reference:      referenceRules(e),
	}, load.WithClock(l.clock))
	if err != nil {
		return fmt.Errorf("lab: load: %w", err)
	}
	l.gen = gen
	l.ctl = chaos.NewController(chaos.Default, l, chaos.WithObserver(l.faultObserved), chaos.WithClock(l.clock))
	// Faults the experiment lists are configured with its parameters, so the
	// dashboard's toggle uses them too.
	for _, s := range e.Timeline() {
		if len(s.Params) > 0 {
			_ = l.ctl.Configure(s.Fault, s.Params)
		}
	}
	l.sampling = newSampling(l)
	if err := l.recs.rewriteRunInfo(l.runInfo()); err != nil {
		return fmt.Errorf("lab: run.json: %w", err)
	}
	loadCtx, stop := context.WithCancel(context.Background())
	l.loadStop = stop
	l.loadDone = make(chan struct{})
	now := l.clock.Now()
	l.mu.Lock()
	l.start = now
	l.mu.Unlock()
	l.sched.begin(now)
	if l.recs.current() != nil {
		win, _ := l.openWindow() // before the first request
		l.recs.loadStarted(now, win)
	}
	go func() {
		defer close(l.loadDone)
		_ = gen.Run(loadCtx)
	}()
	l.event(runfiles.EventRunStart, e.Name, map[string]any{"quick": l.opts.Quick, "duration": e.Duration.String()})
	go l.sampling.loop()
	go l.control()
	return nil
}

// Experiment returns the experiment as it runs (after --quick scaling).
func (l *Lab) Experiment() *experiment.Experiment { return l.exp.Clone() }

// Dir is the run folder of the current recording ("" when not recording).
func (l *Lab) Dir() string { return l.recs.dir() }

// Wait blocks until the experiment has ended (its duration ran out or Stop
// was called) and every child is stopped. It returns an error when the
// recording could not be finished.
func (l *Lab) Wait() error {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitErr
}

// FaultStepErrors lists the experiment's scheduled fault steps (its
// faults: timeline) that failed to apply or to revert so far, in the order
// they failed, each naming the step (faults.N), its fault, the action and
// the step's time. A recording's summary lists those that failed during
// it (Summary.FaultStepErrors), and `levee run` then exits 1. Faults
// toggled by hand are not listed (their errors show in Faults).
func (l *Lab) FaultStepErrors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.stepErrs)
}

// Summary returns the summary of the last recording finished (nil if none).
func (l *Lab) Summary() *runfiles.Summary { return l.recs.lastSummary() }

// Stop ends the experiment now: load stops (requests in flight finish or
// time out), the recording is finished and every child is stopped. Active
// faults are not reverted one by one: each lives in a child (a node's
// knobs, a gateway's pressure, a stopped or killed process) or in the load
// generator (slow clients, a traffic spike) and ends with it. It returns when that is done or ctx ends.
func (l *Lab) Stop(ctx context.Context) error {
	go l.finish("stopped")
	select {
	case <-l.done:
		return l.Wait()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill ends the lab at once, for a user who will not wait for Stop (a
// second interrupt while it stops): every child's process group is
// SIGKILLed and reaped before Kill returns, the end sequence starts (or
// goes on) without them, and a temporary work folder is removed. A Stop
// waiting meanwhile returns once that sequence is done, which no child
// holds up any more. A recording keeps the lines it wrote (each whole);
// its summary and report may be missing.
func (l *Lab) Kill() {
	l.stepCancel()
	l.sup.Kill()
	go l.finish("killed")
	if l.tmpWork {
		_ = os.RemoveAll(l.workDir)
	}
}

// finish runs the end sequence once.
func (l *Lab) finish(reason string) {
	l.stopOnce.Do(func() {
		defer close(l.done)
		close(l.ending)
		l.mu.Lock()
		l.endReason = reason
		l.mu.Unlock()
		l.progress("finishing (%s): waiting for requests in flight…", reason)
		l.event(runfiles.EventRunEnd, reason, nil)
		l.loadStop()
		select {
		case <-l.loadDone:
		case <-time.After(l.exp.ClientTimeout.D() + 10*time.Second):
			l.event(runfiles.EventError, "load did not finish in time", nil)
		}
		l.event(runfiles.EventLoadFinished, "", nil)
		// A fault step under way ends first (the schedule has stopped: no
		// other starts). One that fails now failed during the run: the
		// summary lists it, and it is not reverted while it still applies.
		<-l.timelineDone
		l.sampling.stop() // takes the last sample after load finished
		l.measureRemaining()
		close(l.finishing)
		l.sup.StopWatching()
		l.stopEnv()
		var errs []error
		l.recs.end()
		if err := l.stopRecording(); err != nil && !errors.Is(err, errNotRecording) {
			errs = append(errs, err)
		}
		l.sup.Close()
		l.subs.closeAll()
		l.mu.Lock()
		l.waitErr = errors.Join(errs...)
		l.mu.Unlock()
		l.cancel()
		if l.tmpWork {
			os.RemoveAll(l.workDir)
		}
	})
}

// loadFinished reports whether load has stopped and every request it
// offered has ended.
func (l *Lab) loadFinished() bool {
	select {
	case <-l.loadDone:
		return true
	default:
		return false
	}
}

// isEnding reports whether the end sequence has begun: load is stopping
// or stopped, and the controls that would change the run refuse.
func (l *Lab) isEnding() bool {
	select {
	case <-l.ending:
		return true
	default:
		return false
	}
}

func (l *Lab) isFinishing() bool {
	select {
	case <-l.finishing:
		return true
	default:
		return false
	}
}

// Redis reports the Redis the gateways share their limits through.
func (l *Lab) Redis() RedisStatus {
	r := l.sup.Redis()
	return RedisStatus{Kind: r.Kind, Addr: r.Addr, Nodes: r.Nodes, Up: r.Up}
}

// ChildPIDs lists the current process ids of every child (tests use it).
func (l *Lab) ChildPIDs() map[string]int { return l.sup.ChildPIDs() }
