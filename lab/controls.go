package lab

import (
	"context"
	"time"
)

// Controls is what a dashboard (or a test) may do to a running lab. Every
// method returns quickly: work is handed to the lab's own goroutines, never
// done on the caller's. The TUI depends only on this interface and Sample.
type Controls interface {
	// Samples delivers one Sample per tick (≥ 4 Hz) until the lab stops,
	// then closes. A slow reader misses samples; it never slows the lab.
	Samples() <-chan Sample

	// SetRate sets the target arrival rate (req/s) and pauses the
	// experiment's stages, as a manual override. Rate returns the target.
	SetRate(rps float64)
	Rate() float64
	// Spike multiplies the rate by factor for d, then returns to the schedule.
	Spike(factor float64, d time.Duration)
	// PauseRamp pauses (true) or resumes (false) the experiment's stages.
	PauseRamp(paused bool)
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
	// folder and returns it; StopRecording finishes summary.json.
	StartRecording() (dir string, err error)
	StopRecording() error
	Recording() bool

	// Lesson reports the narration state; NextStep shows the next step.
	Lesson() LessonState
	NextStep()

	// Stop stops load, reverts faults and stops every child process.
	Stop(ctx context.Context) error
}

// FaultStatus is one entry of the fault catalogue.
type FaultStatus struct {
	Key         string `json:"key"` // "1".."9": the key that toggles it
	Name        string `json:"name"`
	Description string `json:"description"`
	Active      bool   `json:"active"`
	Detail      string `json:"detail,omitempty"`
}

// LessonState is where a played experiment's narration stands.
type LessonState struct {
	Title string `json:"title"`
	Step  int    `json:"step"`  // 1-based; 0 when no lesson
	Steps int    `json:"steps"` // total steps
	Kind  string `json:"kind"`  // predict, watch, explain
	Text  string `json:"text"`
}
