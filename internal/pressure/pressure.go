// Package pressure generates real, bounded runtime pressure inside a Go
// process: allocation churn (garbage at a configured MB/s), retained ballast
// (live, touched heap that raises RSS) and CPU hog goroutines that spin for a
// share of their time and yield in between.
//
// The gateway uses it behind PUT /admin/pressure and the fake model behind its
// churn/ballast/cpu knobs. A Generator is safe for concurrent use; Set may be
// called at any time, under load, and swaps the running pressure atomically.
package pressure

import (
	"errors"
	"fmt"
	"math"

	"github.com/levee-lab/levee/internal/wire"
)

// Limits on Config values. They keep a chaos knob from taking the whole
// (2-core, shared) machine down with it.
const (
	// MaxChurnMBPerS bounds allocation churn.
	MaxChurnMBPerS = 4096
	// MaxBallastMB bounds retained ballast.
	MaxBallastMB = 4096
	// MaxCPUHogGoroutines bounds the number of spinning goroutines.
	MaxCPUHogGoroutines = 64
	// MaxCPUHogDuty bounds the share of time each hog goroutine spins, so
	// that hogs always leave some room to the scheduler.
	MaxCPUHogDuty = 0.95
)

// Config describes the pressure to apply. The zero Config applies none.
// Its wire form (JSON and YAML names) is wire.PressurePatch: see Patch and
// Apply.
type Config struct {
	// ChurnMBPerS is the allocation rate of short-lived garbage, in MB/s
	// (1 MB = 1<<20 bytes). 0..MaxChurnMBPerS.
	ChurnMBPerS float64
	// BallastMB is retained, touched heap in MB. 0..MaxBallastMB.
	BallastMB float64
	// CPUHogGoroutines is the number of goroutines that burn CPU.
	// 0..MaxCPUHogGoroutines.
	CPUHogGoroutines int
	// CPUHogDuty is the share (0..MaxCPUHogDuty) of each hog goroutine's
	// time spent spinning; it spins in short slices and yields with
	// runtime.Gosched between them. With CPUHogGoroutines > 0 and duty 0
	// the hogs do nothing.
	CPUHogDuty float64
}

// Patch returns c as a wire patch with every field set.
func (c Config) Patch() wire.PressurePatch {
	return wire.PressurePatch{
		ChurnMBPerS: wire.Ptr(c.ChurnMBPerS), BallastMB: wire.Ptr(c.BallastMB),
		CPUHogGoroutines: wire.Ptr(c.CPUHogGoroutines), CPUHogDuty: wire.Ptr(c.CPUHogDuty),
	}
}

// Apply returns c with the fields p sets replaced; it does not validate.
func (c Config) Apply(p wire.PressurePatch) Config {
	if p.ChurnMBPerS != nil {
		c.ChurnMBPerS = *p.ChurnMBPerS
	}
	if p.BallastMB != nil {
		c.BallastMB = *p.BallastMB
	}
	if p.CPUHogGoroutines != nil {
		c.CPUHogGoroutines = *p.CPUHogGoroutines
	}
	if p.CPUHogDuty != nil {
		c.CPUHogDuty = *p.CPUHogDuty
	}
	return c
}

// IsZero reports whether c applies no pressure at all.
func (c Config) IsZero() bool {
	return c.ChurnMBPerS == 0 && c.BallastMB == 0 && (c.CPUHogGoroutines == 0 || c.CPUHogDuty == 0)
}

// FieldError is the error Validate returns: it names the offending field by
// its JSON name and states the allowed range.
type FieldError struct {
	Field string // wire name, e.g. wire.KnobCPUHogDuty
	Msg   string // e.g. "must be in [0, 0.95], got 2"
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks every field against its allowed range. The error, when not
// nil, is a *FieldError naming the first bad field (JSON name) and its range.
func (c Config) Validate() error {
	if err := checkFloat(wire.KnobChurnMBPerS, c.ChurnMBPerS, 0, MaxChurnMBPerS); err != nil {
		return err
	}
	if err := checkFloat(wire.KnobBallastMB, c.BallastMB, 0, MaxBallastMB); err != nil {
		return err
	}
	if c.CPUHogGoroutines < 0 || c.CPUHogGoroutines > MaxCPUHogGoroutines {
		return &FieldError{Field: wire.KnobCPUHogGoroutines, Msg: fmt.Sprintf("must be in [0, %d], got %d", MaxCPUHogGoroutines, c.CPUHogGoroutines)}
	}
	if err := checkFloat(wire.KnobCPUHogDuty, c.CPUHogDuty, 0, MaxCPUHogDuty); err != nil {
		return err
	}
	return nil
}

func checkFloat(field string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return &FieldError{Field: field, Msg: fmt.Sprintf("must be in [%g, %g], got %g", lo, hi, v)}
	}
	return nil
}

// ErrStopped is returned by Set after Stop.
var ErrStopped = errors.New("pressure: generator stopped")
