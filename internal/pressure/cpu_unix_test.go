//go:build unix

package pressure

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used so far.
// Unlike wall clock it does not grow while the process waits for a core,
// so it bounds what the hogs really took on a loaded machine too.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
