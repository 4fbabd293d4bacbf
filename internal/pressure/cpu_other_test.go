//go:build !unix

package pressure

import "time"

// processCPU is not measured here: the hog test skips its CPU bound.
func processCPU() (time.Duration, bool) { return 0, false }
