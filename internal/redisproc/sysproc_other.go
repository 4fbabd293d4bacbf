//go:build !linux

package redisproc

import (
	"syscall"
	"time"
)

// sysProcAttr puts the child in its own process group. Outside Linux there
// is no parent-death signal; t.Cleanup kills the child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitStopped cannot see a process's state outside Linux; it waits a
// moment for the SIGSTOP to be taken.
func waitStopped(int, time.Duration) bool {
	time.Sleep(10 * time.Millisecond)
	return true
}
