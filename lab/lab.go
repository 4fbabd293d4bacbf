package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/load"
)

// Options configure a Lab.
type Options struct {
	// Executable is the levee binary re-executed for every child (nodes,
	// gateways). Default: os.Executable(). Tests set a binary they built.
	Executable string
	// Record records from the start, as `levee run` does, into Out (or
	// RunsDir/<time>-<name>).
	Record bool
	// Out is the run folder when Record is set ("" = RunsDir/<time>-<name>).
	Out string
	// RunsDir is where run folders go. Default "runs".
	RunsDir string
	// WorkDir holds the children's logs and configs when not recording from
	// the start. Default: a new temporary folder, removed by Stop.
	WorkDir string
	// Quick time-scales the experiment to about 20 s (Experiment.Quick).
	Quick bool
	// Args is the command line, kept in run.json.
	Args []string
	// Progress receives human progress lines (nil: none).
	Progress io.Writer
	// ReadyTimeout bounds each child's start. Default 20 s.
	ReadyTimeout time.Duration
}

// Lab is a running experiment: child processes, load, faults, samples and
// (optionally) a recording. It implements Controls. Create it with Open;
// Wait returns when the experiment ends (or Stop was called) and everything
// is torn down.
type Lab struct {
	exp     *Experiment
	opts    Options
	exe     string
	token   string
	keys    map[string]string
	workDir string // children logs and configs
	tmpWork bool   // workDir is ours to remove
	logsDir string
	start   time.Time // when load started; Sample.Elapsed counts from here

	ctx    context.Context // lives until teardown finishes
	cancel context.CancelFunc
	httpc  *http.Client

	nodes     []*child
	gateways  []*child
	gwRSS     []uint64 // guarded by mu: last VmRSS per gateway
	redisURL  string
	redis     *RedisChild // nil without Redis
	gen       *load.Generator
	loadStop  context.CancelFunc
	loadDone  chan struct{}
	ctl       *chaos.Controller
	sampler   *sampler
	stopOnce  sync.Once
	done      chan struct{} // closed when torn down
	finishing chan struct{} // closed when the end sequence begins

	mu sync.Mutex
	// guarded by mu:
	defenses    map[string]bool
	nodeKnobs   []map[string]any // per node: experiment knobs + patches since
	manual      bool             // SetRate override active
	manualRate  float64
	paused      bool
	pausedAt    time.Time     // when the schedule clock stopped
	pausedTotal time.Duration // schedule clock time lost to pauses
	rateFactor  float64       // chaos traffic_spike
	spikeFactor float64
	spikeUntil  time.Time
	stage       int
	step        int // narration step shown (1-based; 0 none)
	faultsDone  []int
	oomKills    int
	restarts    int // gateway restarts
	killedAt    map[int]time.Time
	rec         *recorder
	subs        map[chan Sample]struct{}
	closedSubs  bool
	summary     *Summary
	waitErr     error
	endReason   string // why the run ended ("done", "stopped"); "" while it runs
	timers      []*time.Timer
	envStopped  bool
}

var _ Controls = (*Lab)(nil)
var _ chaos.Env = (*Lab)(nil)

// Open starts the experiment: Redis if asked, the model nodes, the
// gateways, then load, faults and sampling. It returns once every child is
// ready and load has started; on error everything started is stopped.
func Open(ctx context.Context, exp *Experiment, opts Options) (*Lab, error) {
	if exp == nil {
		return nil, errors.New("lab: no experiment")
	}
	e := exp.Clone()
	e.lines = exp.lines
	if err := e.Normalize(); err != nil {
		return nil, fmt.Errorf("lab: experiment %s: %w", e.Name, err)
	}
	if opts.Quick {
		e = e.Quick()
	}
	exe := opts.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("lab: find own binary: %w", err)
		}
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 20 * time.Second
	}
	l := &Lab{
		exp:         e,
		opts:        opts,
		exe:         exe,
		token:       randomToken(),
		done:        make(chan struct{}),
		finishing:   make(chan struct{}),
		defenses:    map[string]bool{},
		subs:        map[chan Sample]struct{}{},
		rateFactor:  1,
		spikeFactor: 1,
		killedAt:    map[int]time.Time{},
	}
	l.keys = apiKeys(l.token)
	for k, v := range e.Gateway.Defenses {
		l.defenses[k] = v
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	tr := &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	l.httpc = &http.Client{Transport: tr}

	// Folders.
	runDir := ""
	switch {
	case opts.Record:
		d, err := resolveRunDir(opts.Out, opts.RunsDir, e.Name, time.Now())
		if err != nil {
			return nil, err
		}
		runDir = d
		l.workDir = d
	case opts.WorkDir != "":
		l.workDir = opts.WorkDir
	default:
		d, err := os.MkdirTemp("", "levee-lab-")
		if err != nil {
			return nil, fmt.Errorf("lab: work folder: %w", err)
		}
		l.workDir, l.tmpWork = d, true
	}
	l.logsDir = filepath.Join(l.workDir, LogsDir)
	if err := os.MkdirAll(l.logsDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if runDir != "" {
		// The recorder opens before any child so that child_start events land.
		rec, err := openRecorder(runDir, RunInfo{Name: e.Name, Started: time.Now().UTC(), Quick: opts.Quick, Args: opts.Args, Experiment: e, Versions: currentVersions(), Machine: currentMachine()}, nil)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		l.rec = rec
	}
	l.start = time.Now() // provisional, reset when load starts
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

// abort undoes a failed Open: it stops the lab's goroutines and every
// child, records why in events.jsonl, and removes a temporary work folder.
func (l *Lab) abort(err error) {
	close(l.finishing)
	l.teardownChildren()
	l.closeRecorderEarly(err)
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

func (l *Lab) progress(format string, args ...any) {
	if l.opts.Progress != nil {
		fmt.Fprintf(l.opts.Progress, format+"\n", args...)
	}
}

// startChildren starts Redis (when asked), the nodes, then the gateways.
func (l *Lab) startChildren(ctx context.Context) error {
	e := l.exp
	switch e.Redis {
	case "off":
	case "auto":
		r, err := StartRedis(ctx, l.logsDir)
		if errors.Is(err, ErrNoRedisServer) {
			l.progress("redis: auto: %v; running without Redis (in-process limits)", err)
			l.event(EventError, "redis-server not found; running without Redis", nil)
		} else if err != nil {
			return err // "lab: redis: …"
		} else {
			l.redis, l.redisURL = r, r.URL()
			l.event(EventChildStart, "redis", map[string]any{"url": l.redisURL, "pid": r.PID()})
		}
	default:
		l.redisURL = e.Redis
	}

	l.progress("starting %d model node(s) and %d gateway(s)…", e.Nodes.Count, e.Gateway.Count)
	l.nodeKnobs = make([]map[string]any, e.Nodes.Count)
	for i := range e.Nodes.Count {
		l.nodeKnobs[i] = cloneMap(e.Nodes.Knobs)
		if l.nodeKnobs[i] == nil {
			l.nodeKnobs[i] = map[string]any{}
		}
		c := &child{
			name: fmt.Sprintf("node-%d", i), kind: "node", index: i, exe: l.exe,
			logPath:      filepath.Join(l.logsDir, fmt.Sprintf("node-%d.log", i)),
			env:          []string{"LEVEE_ADMIN_TOKEN=" + l.token},
			readyTimeout: l.opts.ReadyTimeout,
			onExit:       l.childExited,
		}
		c.args = l.nodeArgs
		l.nodes = append(l.nodes, c)
	}
	if err := startAll(ctx, l.nodes); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	for _, c := range l.nodes {
		l.event(EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen()})
	}

	l.gwRSS = make([]uint64, e.Gateway.Count)
	for i := range e.Gateway.Count {
		c := &child{
			name: fmt.Sprintf("gateway-%d", i), kind: "gateway", index: i, exe: l.exe,
			logPath:      filepath.Join(l.logsDir, fmt.Sprintf("gateway-%d.log", i)),
			env:          []string{"LEVEE_ADMIN_TOKEN=" + l.token},
			readyTimeout: l.opts.ReadyTimeout,
			onExit:       l.childExited,
		}
		c.args = l.gatewayArgs
		l.gateways = append(l.gateways, c)
	}
	if err := startAll(ctx, l.gateways); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	for _, c := range l.gateways {
		l.event(EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen(), "admin": c.Admin()})
		go l.watchMemory(c)
	}
	return nil
}

// startAll starts children concurrently and returns the first error.
func startAll(ctx context.Context, cs []*child) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Start(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nodeArgs: one node per process, knobs as a JSON patch so that a restarted
// node comes back with the knobs it had.
func (l *Lab) nodeArgs(index int, listen, _ string) []string {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	l.mu.Lock()
	knobs, _ := json.Marshal(l.nodeKnobs[index])
	l.mu.Unlock()
	return []string{"fakemodel", "--nodes", "1", "--listen", listen, "--knobs", string(knobs)}
}

// gatewayArgs writes the gateway's config (current defenses, same ports on
// a restart) and returns its arguments.
func (l *Lab) gatewayArgs(index int, listen, admin string) []string {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if admin == "" {
		admin = "127.0.0.1:0"
	}
	path := filepath.Join(l.workDir, fmt.Sprintf("gateway-%d.yaml", index))
	b, _, err := l.gatewayConfigFor(listen, admin)
	if err != nil {
		// Validated at Open; a failure here shows in the child's log.
		b = []byte("# " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
	}
	_ = os.WriteFile(path, b, 0o600)
	return []string{"gateway", "--config", path}
}

func (l *Lab) gatewayConfigFor(listen, admin string) ([]byte, map[string]any, error) {
	nodes := make([]string, len(l.nodes))
	for i, n := range l.nodes {
		nodes[i] = n.Listen()
	}
	l.mu.Lock()
	def := make(map[string]bool, len(l.defenses))
	for k, v := range l.defenses {
		def[k] = v
	}
	l.mu.Unlock()
	return gatewayConfig(l.exp, gatewayParams{
		listen: listen, admin: admin, token: l.token, nodes: nodes, keys: l.keys,
		defenses: def, redisURL: l.redisURL, gateways: len(l.gateways),
	})
}

// childExited handles a process that ended without the lab asking: a
// gateway is restarted after the restart delay (a pod), a node stays down.
func (l *Lab) childExited(c *child, err error) {
	if l.isFinishing() {
		return
	}
	l.event(EventChildExit, c.name, map[string]any{"pid": c.PID(), "status": exitText(err)})
	l.progress("%s exited: %s", c.name, exitText(err))
	if c.kind == "gateway" {
		l.restartGatewayLater(c, "crash")
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

// restartGatewayLater restarts c after the experiment's restart delay.
func (l *Lab) restartGatewayLater(c *child, why string) {
	d := l.exp.Gateway.RestartDelay.D()
	c.setRestart(time.Now().Add(d))
	go func() {
		select {
		case <-time.After(d):
		case <-l.finishing:
			return
		}
		ctx, cancel := context.WithTimeout(l.ctx, l.opts.ReadyTimeout)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			l.event(EventError, c.name+": restart failed", map[string]any{"error": err.Error()})
			l.progress("%s: restart failed: %v", c.name, err)
			return
		}
		l.mu.Lock()
		l.restarts++
		l.mu.Unlock()
		l.event(EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen(), "restart": why})
	}()
}

// memoryPoll is how often gateway RSS is read.
const memoryPoll = 100 * time.Millisecond

// watchMemory reads the gateway's VmRSS several times a second; at the
// pod limit it SIGKILLs it (an OOM kill), counts it and restarts it after
// the restart delay.
func (l *Lab) watchMemory(c *child) {
	limit := uint64(0)
	if mb := l.exp.Gateway.MemoryLimitMB; mb > 0 {
		limit = uint64(mb * (1 << 20))
	}
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for {
		select {
		case <-l.finishing:
			return
		case <-t.C:
		}
		if !c.Up() {
			continue
		}
		rss, err := readRSS(c.PID())
		if err != nil {
			continue
		}
		l.mu.Lock()
		l.gwRSS[c.index] = rss
		l.mu.Unlock()
		if limit == 0 || rss < limit || l.isFinishing() {
			continue
		}
		// Counted and logged before the kill completes, so a kill racing
		// the end of a recording is in both its summary and its events.
		pid := c.PID()
		l.mu.Lock()
		l.oomKills++
		n := l.oomKills
		l.gwRSS[c.index] = 0
		l.mu.Unlock()
		l.event(EventOOMKill, c.name, map[string]any{"pid": pid, "rss_bytes": rss, "limit_bytes": limit, "oom_kills": n})
		c.Kill()
		l.progress("%s OOM-killed at %.0f MB (limit %.0f MB)", c.name, float64(rss)/(1<<20), float64(limit)/(1<<20))
		l.restartGatewayLater(c, "oom")
	}
}

// startLoad creates the generator, the fault controller and the sampler,
// then starts load, sampling and the schedule.
func (l *Lab) startLoad() error {
	e := l.exp
	targets := make([]string, len(l.gateways))
	for i, g := range l.gateways {
		targets[i] = "http://" + g.Listen()
	}
	gen, err := load.New(load.Config{
		Targets: targets,
		Mix: load.Mix{
			Priorities:       cloneFloats(e.Mix.Priorities),
			Keys:             l.keys,
			Routes:           cloneFloats(e.Mix.Routes),
			RoutesByPriority: cloneRouteTables(e.Mix.RoutesByPriority),
			PromptTokens:     [2]int{e.Mix.PromptTokens.Min, e.Mix.PromptTokens.Max},
			MaxTokens:        e.Mix.MaxTokens,
		},
		Arrival:        e.Arrival,
		ClientTimeout:  e.ClientTimeout.D(),
		MaxOutstanding: e.MaxOutstanding,
		Seed:           e.Seed,
	})
	if err != nil {
		return fmt.Errorf("lab: load: %w", err)
	}
	l.gen = gen
	l.ctl = chaos.NewController(chaos.Default, l, chaos.WithObserver(l.faultObserved))
	// Faults the experiment lists are configured with its parameters, so the
	// dashboard's toggle uses them too.
	for _, f := range e.Faults {
		if raw, err := faultParams(f.Params); err == nil && raw != nil {
			_ = l.ctl.Configure(f.Fault, raw)
		}
	}
	l.sampler = newSampler(l)

	if l.rec != nil {
		info := l.runInfo()
		if err := writeJSONAtomic(filepath.Join(l.rec.dir, RunFile), info); err != nil {
			return fmt.Errorf("lab: run.json: %w", err)
		}
	}
	loadCtx, stop := context.WithCancel(context.Background())
	l.loadStop = stop
	l.loadDone = make(chan struct{})
	l.mu.Lock()
	l.start = time.Now()
	if l.rec != nil {
		l.rec.agg = newAggregator(l.start, 0)
	}
	l.mu.Unlock()
	go func() {
		defer close(l.loadDone)
		_ = gen.Run(loadCtx)
	}()
	l.event(EventRunStart, e.Name, map[string]any{"quick": l.opts.Quick, "duration": e.Duration.String()})
	go l.sampler.loop()
	go l.control()
	return nil
}

// runInfo is run.json for a recording starting now.
func (l *Lab) runInfo() RunInfo {
	r := Resolved{
		Executable: l.exe,
		Tick:       l.exp.Tick,
		Redis:      l.redisURL,
		NodeKnobs:  cloneMap(l.exp.Nodes.Knobs),
		Keys:       l.keys,
		LogsDir:    l.logsDir,
	}
	for _, n := range l.nodes {
		r.Nodes = append(r.Nodes, ResolvedChild{Name: n.name, Listen: n.Listen(), PID: n.PID(), Log: n.logPath})
	}
	for _, g := range l.gateways {
		r.Gateways = append(r.Gateways, ResolvedChild{Name: g.name, Listen: g.Listen(), Admin: g.Admin(), PID: g.PID(), Log: g.logPath})
	}
	if len(l.gateways) > 0 {
		if b, _, err := l.gatewayConfigFor(l.gateways[0].Listen(), l.gateways[0].Admin()); err == nil {
			var m map[string]any
			if yaml.Unmarshal(b, &m) == nil {
				delete(m, "admin_token")
				r.GatewayConfig = m
			}
		}
	}
	return RunInfo{
		Name: l.exp.Name, Started: time.Now().UTC(), Quick: l.opts.Quick, Args: l.opts.Args,
		Experiment: l.exp, Resolved: r, Versions: currentVersions(), Machine: currentMachine(),
	}
}

// event appends an event to the recording (if any).
func (l *Lab) event(kind, detail string, fields map[string]any) {
	now := time.Now()
	l.mu.Lock()
	rec := l.rec
	start := l.start
	l.mu.Unlock()
	if rec == nil {
		return
	}
	ev := Event{Time: now.UTC(), Elapsed: round(now.Sub(start).Seconds(), 3), Kind: kind, Detail: detail, Fields: fields}
	rec.writeError(rec.events.Write(ev), l.opts.Progress)
}

// closeRecorderEarly records why Open failed and closes the files.
func (l *Lab) closeRecorderEarly(err error) {
	l.mu.Lock()
	rec := l.rec
	l.rec = nil
	l.mu.Unlock()
	if rec == nil {
		return
	}
	ev := Event{Time: time.Now().UTC(), Kind: EventError, Detail: err.Error()}
	_ = rec.events.Write(ev)
	_ = rec.close()
}

// Experiment returns the experiment as it runs (after --quick scaling).
func (l *Lab) Experiment() *Experiment { return l.exp.Clone() }

// Dir is the run folder of the current recording ("" when not recording).
func (l *Lab) Dir() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec == nil {
		return ""
	}
	return l.rec.dir
}

// Wait blocks until the experiment has ended (its duration ran out or Stop
// was called) and every child is stopped. It returns an error when the
// recording could not be finished.
func (l *Lab) Wait() error {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitErr
}

// Summary returns the summary of the last recording finished (nil if none).
func (l *Lab) Summary() *Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.summary
}

// Stop ends the experiment now: load stops (requests in flight finish or
// time out), faults are reverted, the recording is finished and every child
// is stopped. It returns when that is done or ctx ends.
func (l *Lab) Stop(ctx context.Context) error {
	go l.finish("stopped")
	select {
	case <-l.done:
		return l.Wait()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish runs the end sequence once.
func (l *Lab) finish(reason string) {
	l.stopOnce.Do(func() {
		defer close(l.done)
		l.mu.Lock()
		l.endReason = reason
		l.mu.Unlock()
		l.progress("finishing (%s): waiting for requests in flight…", reason)
		l.event(EventRunEnd, reason, nil)
		l.loadStop()
		select {
		case <-l.loadDone:
		case <-time.After(l.exp.ClientTimeout.D() + 10*time.Second):
			l.event(EventError, "load did not finish in time", nil)
		}
		l.event(EventLoadFinished, "", nil)
		l.sampler.stop() // takes the last sample after load finished
		close(l.finishing)
		l.stopEnv()
		var errs []error
		if err := l.StopRecording(); err != nil && !errors.Is(err, errNotRecording) {
			errs = append(errs, err)
		}
		l.teardownChildren()
		l.mu.Lock()
		l.closedSubs = true
		for ch := range l.subs {
			close(ch)
		}
		l.subs = nil
		l.waitErr = errors.Join(errs...)
		l.mu.Unlock()
		l.cancel()
		if l.tmpWork {
			os.RemoveAll(l.workDir)
		}
	})
}

// teardownChildren stops gateways (drain), then nodes, then Redis.
func (l *Lab) teardownChildren() {
	var wg sync.WaitGroup
	for _, g := range l.gateways {
		wg.Add(1)
		go func() { defer wg.Done(); g.Close(3 * time.Second) }()
	}
	wg.Wait()
	for _, n := range l.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Close(2 * time.Second) }()
	}
	wg.Wait()
	if l.redis != nil {
		l.redis.Stop()
	}
}

// ChildPIDs lists the current process ids of every child (tests use it).
func (l *Lab) ChildPIDs() map[string]int {
	m := map[string]int{}
	for _, c := range append(append([]*child(nil), l.nodes...), l.gateways...) {
		m[c.name] = c.PID()
	}
	if l.redis != nil {
		m["redis"] = l.redis.PID()
	}
	return m
}
