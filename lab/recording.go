package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
)

var errNotRecording = errors.New("lab: not recording")

// testHookBeforeRecordingSet, when set (tests only), runs in
// StartRecording between its files' creation and the moment the recording
// becomes the lab's.
var testHookBeforeRecordingSet func()

// recording is one recording in progress.
type recording struct {
	rec *runfiles.Recorder
	agg *runfiles.Aggregator // nil until load starts (a recording from Open)
	// live counts the requests offered inside the recording: one started
	// while load ran, or one from the start (fromStart), whose window opens
	// as load starts, so that stopping it while load still runs waits for
	// the requests in flight rather than leaving them unaccounted.
	live *liveWindow
	// fromStart is a recording opened before load started: when it ends
	// with the run, after load finished, the generator's totals are its own.
	fromStart bool
	fbBase    float64 // the gateways' accumulated Redis fallbacks when recording started
	oomBase   int
	restBase  int
	// stepBase is how many fault steps had failed when recording started
	// (the summary lists those after).
	stepBase int
}

// recordings holds the lab's current recording and the summary of the
// last one finished. Safe for concurrent use.
type recordings struct {
	mu      sync.Mutex
	cur     *recording        // guarded by mu; nil when not recording
	summary *runfiles.Summary // guarded by mu
	// ended is set by the lab's end sequence before it finishes the
	// recording on: no recording may start after it. Guarded by mu.
	ended bool
}

// open starts recording into dir; it fails when a recording is on.
func (r *recordings) open(dir string, info runfiles.RunInfo, agg *runfiles.Aggregator, opts ...runfiles.RecorderOption) error {
	rec, err := runfiles.OpenRecorder(dir, info, opts...)
	if err != nil {
		return err
	}
	return r.set(&recording{rec: rec, agg: agg})
}

// set makes c the current recording unless one is on already, or the
// lab's end sequence has finished the recordings (ErrStopping); else it
// closes c's files.
func (r *recordings) set(c *recording) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		c.rec.Close()
		return ErrStopping
	}
	if r.cur != nil {
		c.rec.Close()
		return errors.New("lab: already recording")
	}
	r.cur = c
	return nil
}

// end refuses every recording from now on (the lab's end sequence, before
// it finishes the one on).
func (r *recordings) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
}

func (r *recordings) current() *recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// take ends the current recording (nil when none) for its owner to finish.
func (r *recordings) take() *recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cur
	r.cur = nil
	return c
}

func (r *recordings) dir() string {
	if c := r.current(); c != nil {
		return c.rec.Dir()
	}
	return ""
}

func (r *recordings) lastSummary() *runfiles.Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.summary
}

// abort records why the lab failed to open and closes the files.
func (r *recordings) abort(err error) {
	if c := r.take(); c != nil {
		_ = c.rec.WriteEvent(runfiles.Event{Time: time.Now().UTC(), Kind: runfiles.EventError, Detail: err.Error()})
		_ = c.rec.Close()
	}
}

// rewriteRunInfo rewrites run.json of a recording from the start, once
// the children's addresses are known.
func (r *recordings) rewriteRunInfo(info runfiles.RunInfo) error {
	if c := r.current(); c != nil {
		return c.rec.WriteRunInfo(info)
	}
	return nil
}

// loadStarted starts the aggregation of a recording from the start, and
// its window: win, opened before the first request. It closes win when no
// recording from the start is on.
func (r *recordings) loadStarted(now time.Time, win *liveWindow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil || r.cur.agg != nil {
		win.tr.Close()
		return
	}
	r.cur.agg = runfiles.NewAggregator(now, 0)
	r.cur.live, r.cur.fromStart = win, true
}

// rate records a change of the generator's target.
func (r *recordings) rate(now time.Time, rate float64) {
	if c := r.current(); c != nil && c.agg != nil {
		c.agg.Rate(now, rate)
	}
}

// fault records an apply (applied) or revert of a fault.
func (r *recordings) fault(name string, applied bool, t time.Time) {
	c := r.current()
	if c == nil || c.agg == nil {
		return
	}
	if applied {
		c.agg.FaultApplied(name, t)
	} else {
		c.agg.FaultReverted(name, t)
	}
}

// event appends an event to the recording (if any).
func (l *Lab) event(kind, detail string, fields map[string]any) {
	if c := l.recs.current(); c != nil {
		_ = c.rec.WriteEvent(l.newEvent(kind, detail, fields))
	}
}

// newEvent is an event at the lab's now.
func (l *Lab) newEvent(kind, detail string, fields map[string]any) runfiles.Event {
	return l.newEventAt(l.clock.Now(), kind, detail, fields)
}

// newEventAt is an event at now, a time of the lab's clock; its Time is
// now as events.jsonl keeps it (UTC, without the monotonic reading).
func (l *Lab) newEventAt(now time.Time, kind, detail string, fields map[string]any) runfiles.Event {
	l.mu.Lock()
	start := l.start
	l.mu.Unlock()
	return runfiles.Event{Time: now.UTC(), Elapsed: round(now.Sub(start).Seconds(), 3), Kind: kind, Detail: detail, Fields: fields}
}

func (l *Lab) recorderOptions() []runfiles.RecorderOption {
	return []runfiles.RecorderOption{runfiles.WithReports(l.opts.Reports...), runfiles.WithErrorLog(l.errorLog())}
}

// StartRecording starts a new run folder (RunsDir/<time>-<name>) with the
// same files as `levee run`, covering from now until StopRecording. It
// writes run.json and creates the files before it returns. Once the lab
// is finishing it returns ErrStopping. The folder is its own: a call that
// fails (the lab ended, another recording won) leaves none behind.
func (l *Lab) StartRecording() (string, error) {
	if l.isEnding() {
		return "", ErrStopping
	}
	if dir := l.recs.dir(); dir != "" {
		return dir, fmt.Errorf("lab: already recording into %s", dir)
	}
	dir, err := l.claimRunDir()
	if err != nil {
		return "", err
	}
	rec, err := runfiles.OpenRecorder(dir, l.runInfo(), l.recorderOptions()...)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("lab: %w", err)
	}
	c, now := l.newLiveRecording(rec)
	if testHookBeforeRecordingSet != nil {
		testHookBeforeRecordingSet()
	}
	if err := l.recs.set(c); err != nil { // the lab ended, or another StartRecording won
		c.live.tr.Close()
		os.RemoveAll(dir)
		return "", err
	}
	// A fault already active opens its window now, in the summary and in
	// events.jsonl alike: a killed run's rebuild and the HTML report's
	// bands read the windows from the events, and without an apply there
	// a fault active from the start to the end had no window at all.
	for _, fs := range l.ctl.Active() {
		c.agg.FaultApplied(fs.Name, now)
		_ = rec.WriteEvent(l.newEventAt(now, runfiles.EventFaultApply, fs.Name+" "+fs.Detail+" (active when the recording began)",
			map[string]any{"fault": fs.Name, "detail": fs.Detail, "before_recording": true}))
	}
	l.event(runfiles.EventRecordStart, dir, nil)
	// Predictions made before the recording began belong to it too.
	for _, ev := range l.narr.history() {
		_ = rec.WriteEvent(ev)
	}
	return dir, nil
}

// claimRunDir makes a new run folder for a recording started now, one no
// other recording uses (two started within a second would otherwise share
// the name).
func (l *Lab) claimRunDir() (string, error) {
	for range 10 {
		dir, err := runfiles.ResolveRunDir("", l.opts.RunsDir, l.exp.Name, time.Now(), false)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return "", fmt.Errorf("lab: runs folder: %w", err)
		}
		switch err := os.Mkdir(dir, 0o755); {
		case err == nil:
			return dir, nil
		case !errors.Is(err, fs.ErrExist):
			return "", fmt.Errorf("lab: run folder: %w", err)
		}
	}
	return "", errors.New("lab: run folder: another recording took every name tried")
}

// newLiveRecording is a recording into rec starting now, while load runs:
// its window opens now, and its baselines (level changes, P0 totals,
// Redis fallbacks, OOM kills, restarts, failed fault steps) are taken.
func (l *Lab) newLiveRecording(rec *runfiles.Recorder) (*recording, time.Time) {
	// The level changes the gateways made before now are not this
	// recording's.
	bctx, cancel := context.WithTimeout(l.ctx, 2*time.Second)
	l.sampling.levels.baseline(bctx)
	cancel()
	win, now := l.openWindow()
	p0 := l.gen.Totals().ByPriority[wire.PriorityP0]
	var p0Fin uint64
	for _, n := range p0.Outcomes {
		p0Fin += n
	}
	counters := l.sup.Counters()
	c := &recording{
		rec: rec, agg: runfiles.NewAggregator(now, l.gen.Rate()), live: win,
		fbBase:  l.sampling.fallbackTotal(),
		oomBase: counters.OOMKills, restBase: counters.Restarts,
		stepBase: len(l.FaultStepErrors()),
	}
	c.agg.Base(p0Fin, p0.Outcomes[wire.OutcomeOK.String()])
	return c, now
}

// StopRecording finishes the recording: summary.json, the logs, the
// reports. A recording started while load ran counts the requests offered
// inside it: StopRecording first waits for those still in flight (each
// ends within the client timeout). It returns when the files are written.
func (l *Lab) StopRecording() error { return l.stopRecording() }

func (l *Lab) stopRecording() error {
	c := l.recs.current()
	if c == nil {
		return errNotRecording
	}
	if l.sampling != nil {
		l.sampling.levels.flush() // the changes the samples' level did not show
	}
	l.event(runfiles.EventRecordStop, c.rec.Dir(), nil)
	if l.recs.take() != c {
		return errNotRecording // another StopRecording took it
	}
	counters := l.sup.Counters()
	l.mu.Lock()
	ended := l.endReason
	l.mu.Unlock()
	if ended == "" {
		ended = "recording stopped"
	}
	in := runfiles.SummaryInput{Exp: l.exp, Quick: l.opts.Quick, End: l.clock.Now(), Ended: ended}
	if c.live != nil && !(c.fromStart && l.loadFinished()) {
		tot, check, end := l.closeWindow(c.live)
		in.Totals, in.LiveShed, in.End = tot, &check, end
		counters = l.sup.Counters()
	} else {
		// The whole run, ended: every request offered has ended, and the
		// last sample read the gateways' final counters.
		if c.live != nil {
			c.live.tr.Close()
		}
		in.Totals, in.GatewayShed = l.gen.Totals(), uint64(l.sampling.shedTotal()+0.5)
	}
	in.Restarts, in.OOMKills = counters.Restarts-c.restBase, counters.OOMKills-c.oomBase
	in.ShedExact = in.Restarts == 0
	if in.LiveShed != nil && in.Restarts > 0 {
		in.LiveShed.Exact = false
	}
	agg := c.agg
	if agg == nil { // load never started
		agg = runfiles.NewAggregator(l.clock.Now(), 0)
	}
	in.Redis = l.redisSummary(l.sampling.fallbackTotal() - c.fbBase)
	for _, err := range l.FaultStepErrors()[c.stepBase:] {
		in.FaultStepErrors = append(in.FaultStepErrors, err.Error())
	}
	sum := agg.Summarize(in)
	err := c.rec.Finish(sum, l.logsDir)
	l.recs.mu.Lock()
	l.recs.summary = &sum
	l.recs.mu.Unlock()
	return err
}

// redisSummary is the summary's Redis before its failovers.
func (l *Lab) redisSummary(fallbacks float64) runfiles.RedisSummary {
	r := l.sup.Redis()
	return runfiles.RedisSummary{Kind: r.Kind, Addr: r.Addr, Fallbacks: max(fallbacks, 0)}
}

// Recording reports whether a recording is on.
func (l *Lab) Recording() bool { return l.recs.current() != nil }

// runInfo is run.json for a recording starting now.
func (l *Lab) runInfo() runfiles.RunInfo {
	r := runfiles.Resolved{
		Executable: l.exe,
		Tick:       l.exp.Tick,
		Keys:       l.keys,
		LogsDir:    l.logsDir,
		NodeKnobs:  l.exp.Clone().Nodes.Knobs,
	}
	if l.sup != nil {
		r.Redis = l.sup.RedisURL() // runfiles redacts its password in run.json
		for _, n := range l.sup.Nodes() {
			r.Nodes = append(r.Nodes, runfiles.ResolvedChild{Name: n.Name(), Listen: n.Listen(), PID: n.PID(), Log: n.LogPath()})
		}
		for _, g := range l.sup.Gateways() {
			r.Gateways = append(r.Gateways, runfiles.ResolvedChild{Name: g.Name(), Listen: g.Listen(), Admin: g.Admin(), PID: g.PID(), Log: g.LogPath()})
		}
		if gws := l.sup.Gateways(); len(gws) > 0 {
			r.GatewayConfig = l.resolvedGatewayConfig(gws[0].Listen(), gws[0].Admin())
		}
	}
	return runfiles.RunInfo{
		Name: l.exp.Name, Started: time.Now().UTC(), Quick: l.opts.Quick, Args: l.opts.Args,
		Experiment: l.exp, Resolved: r, Versions: runfiles.CurrentVersions(), Machine: runfiles.CurrentMachine(),
	}
}

// resolvedGatewayConfig is a gateway's config as an object, without its
// admin token (nil when it does not build).
func (l *Lab) resolvedGatewayConfig(listen, admin string) map[string]any {
	b, err := l.gatewayConfig(listen, admin, l.sup.NodeAddrs(), l.sup.RedisURL())
	if err != nil {
		return nil
	}
	var m map[string]any
	if yaml.Unmarshal(b, &m) != nil {
		return nil
	}
	delete(m, "admin_token")
	return m
}
