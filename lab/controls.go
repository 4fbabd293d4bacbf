package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// Controls is what a dashboard (or a test) may do to a running lab. The TUI
// depends only on this interface and runfiles.Sample.
//
// Two kinds of method: most return at once — they change the lab's state
// in memory, append a line to events.jsonl, and hand admin calls and fault
// applications to the lab's own goroutines. StartRecording, StopRecording
// and Stop do file and process I/O and block until it is done: a dashboard
// calls them off its UI goroutine (in a tea.Cmd), never from Update.
type Controls interface {
	// Samples delivers one Sample per tick (≥ 4 Hz) until the lab stops,
	// then closes. A slow reader misses samples; it never slows the lab.
	Samples() <-chan runfiles.Sample

	// SetRate sets the target arrival rate (req/s) and pauses the
	// experiment's stages, as a manual override; it refuses a rate that is
	// negative, not finite or above load.MaxRate. Rate returns the target
	// as SetRate sets it (the manual rate, else the stages' rate), before a
	// Spike or the traffic_spike fault's factor.
	// SetRate, Spike and PauseRamp return ErrStopping, changing nothing,
	// once the lab is finishing (as ToggleFault does).
	SetRate(rps float64) error
	Rate() float64
	// Spike multiplies the rate by factor for d, then returns to the schedule.
	Spike(factor float64, d time.Duration) error
	// PauseRamp pauses (true) or resumes (false) the experiment's stages.
	PauseRamp(paused bool) error
	RampPaused() bool

	// Faults lists the catalogue with what is active now; ToggleFault applies
	// the named fault with its default (or experiment) parameters, or reverts
	// it when active.
	Faults() []FaultStatus
	ToggleFault(name string) error

	// Defenses reports each gateway defense; SetDefense switches one on all
	// gateways.
	Defenses() map[string]bool
	SetDefense(name string, on bool) error

	// StartRecording writes the same files as `levee run` into a new run
	// folder and returns it; StopRecording finishes summary.json, the logs
	// and the reports. Both block on file I/O until done. StartRecording
	// returns ErrStopping once the lab is finishing (its end sequence
	// finishes the recording on, and no later one).
	StartRecording() (dir string, err error)
	StopRecording() error
	Recording() bool

	// Redis reports the Redis the gateways share their limits through.
	Redis() RedisStatus

	// Lesson reports the narration state; NextStep shows the next step
	// and moves the lesson's schedule (stages, faults) to its time. NextStep
	// returns ErrStopping once the lab is finishing, and an error wrapping
	// ErrNoNextStep when there is no next step (no narration, or the last
	// step shows).
	Lesson() LessonState
	NextStep() error
	// Predict records the room's answer to the predict step that asks for
	// a number (LessonState.Ask): events.jsonl, and beside the measured
	// value at the explain step.
	Predict(a PredictionAnswer) error

	// Stop stops load, reverts faults, finishes the recording and stops
	// every child process; it blocks until that is done or ctx ends.
	Stop(ctx context.Context) error
}

// ErrStopping is what a control that would change the run returns once the
// lab is finishing (the experiment ended, or Stop was called): nothing it
// would change is running any more.
var ErrStopping = errors.New("lab: stopping")

// ErrNoNextStep is what NextStep's error wraps when there is no step to
// go to; the error's text after it says why ("step 4/4 is the last").
var ErrNoNextStep = errors.New("lab: no next step")

// FaultStatus is one entry of the fault catalogue.
type FaultStatus struct {
	Key         string `json:"key"` // FaultKey(its index): the key that toggles it
	Name        string `json:"name"`
	Description string `json:"description"`
	Active      bool   `json:"active"`
	Detail      string `json:"detail,omitempty"`
	// Unavailable says why the fault cannot apply in this lab (a
	// redis_outage without a Redis child); "" when it can. Toggling an
	// unavailable fault is an error at once.
	Unavailable string `json:"unavailable,omitempty"`
	// Error is why its last apply or revert failed (a model_latency patch
	// that a node down refused, …); "" after a success.
	Error string `json:"error,omitempty"`
}

// RedisStatus is the lab's Redis: its kind (off, server, embedded,
// cluster, external), address, and how many of the processes the lab runs
// for it are up.
type RedisStatus struct {
	Kind  string `json:"kind"`
	Addr  string `json:"addr,omitempty"`
	Nodes int    `json:"nodes,omitempty"`
	Up    int    `json:"up,omitempty"`
}

// faultKeys are the keys of the catalogue's faults, in order: the digit row,
// then the same row shifted (on a US layout) for the eleventh to the
// twentieth, so that every fault of the catalogue (eleven today) has one.
// They avoid every other key of the dashboard (tui's keys test checks).
var faultKeys = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "0",
	"!", "@", "#", "$", "%", "^", "&", "*", "(", ")"}

// FaultKey is the key of the i-th fault of the catalogue (from 0): "1"…"9",
// "0", then "!", "@", … ")"; "" past the twentieth.
func FaultKey(i int) string {
	if i < 0 || i >= len(faultKeys) {
		return ""
	}
	return faultKeys[i]
}

// Faults lists the fault catalogue with what is active now; each has its
// FaultKey.
func (l *Lab) Faults() []FaultStatus {
	cat := l.ctl.Catalogue()
	out := make([]FaultStatus, len(cat))
	for i, c := range cat {
		out[i] = FaultStatus{Key: FaultKey(i), Name: c.Name, Description: c.Description, Active: c.Active, Detail: c.Detail,
			Unavailable: l.faultUnavailable(c.Name)}
	}
	l.mu.Lock()
	for i := range out {
		out[i].Error = l.faultErrs[out[i].Name]
	}
	l.mu.Unlock()
	return out
}

// faultUnavailable says why the fault called name cannot apply in this lab,
// or "" when it can.
func (l *Lab) faultUnavailable(name string) string {
	switch name {
	case (&chaos.RedisOutage{}).Name():
		if l.sup != nil && l.sup.HasRedisChild() {
			return ""
		}
		if l.sup != nil && l.sup.HasRedisCluster() {
			return "this lab's Redis is a cluster: redis_master_kill kills one master"
		}
	case (&chaos.RedisMasterKill{}).Name():
		if l.sup != nil && l.sup.HasRedisCluster() {
			return ""
		}
		if l.sup != nil && l.sup.HasRedisChild() {
			return "this lab's Redis is one server, not a cluster: redis_outage kills it (redis: cluster starts a cluster)"
		}
	default:
		return ""
	}
	if l.sup != nil && l.sup.RedisURL() != "" {
		return "the lab uses an external Redis it cannot stop"
	}
	return "no Redis in this lab (redis: auto starts one: redis-server, else the embedded server)"
}

// ToggleFault applies the named fault (experiment or default parameters),
// or reverts it when active. The work happens on a lab goroutine; its
// outcome shows in Faults, the samples and events.jsonl. An unknown name is
// an error at once.
func (l *Lab) ToggleFault(name string) error {
	if _, err := chaos.Default.Get(name); err != nil {
		return err
	}
	if l.isEnding() {
		return ErrStopping
	}
	if why := l.faultUnavailable(name); why != "" {
		err := fmt.Errorf("lab: %s is unavailable: %s", name, why)
		l.event(runfiles.EventFaultError, name+" unavailable", map[string]any{"fault": name, "action": chaos.ActionApply, "error": err.Error()})
		return err
	}
	go func() {
		ctx, cancel := context.WithTimeout(l.ctx, l.opts.ReadyTimeout+5*time.Second)
		defer cancel()
		if _, err := l.ctl.Toggle(ctx, name); err != nil {
			l.progressErr("fault %s: %v", name, err)
		}
	}()
	return nil
}

// Defenses reports each defense as the lab last set it on the gateways.
func (l *Lab) Defenses() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]bool, len(l.defenses))
	for k, v := range l.defenses {
		m[k] = v
	}
	return m
}

// SetDefense switches one defense on every gateway (and on gateways that
// restart later). Unknown names are an error at once; the admin calls run
// on a lab goroutine and failures land in events.jsonl. Switches pressed
// in quick succession reach the gateways one at a time, each sending the
// defense's state as the lab holds it then, so the last one sent is the
// lab's (Defenses).
func (l *Lab) SetDefense(name string, on bool) error {
	if !experiment.KnownDefense(name) {
		return fmt.Errorf("lab: unknown defense %q (known: %v)", name, experiment.Defenses)
	}
	l.mu.Lock()
	l.defenses[name] = on
	l.mu.Unlock()
	l.event(runfiles.EventDefense, fmt.Sprintf("%s %s", name, map[bool]string{true: "on", false: "off"}[on]), map[string]any{"defense": name, "on": on})
	go func() {
		l.defenseMu.Lock()
		defer l.defenseMu.Unlock()
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		defer cancel()
		l.sup.SetDefense(ctx, name, l.Defenses()[name])
	}()
	return nil
}
