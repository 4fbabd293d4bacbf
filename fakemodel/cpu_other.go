//go:build !unix

package fakemodel

import "time"

// processCPUTime is not measured here: the CPU watermark never fires.
func processCPUTime() (time.Duration, bool) { return 0, false }
