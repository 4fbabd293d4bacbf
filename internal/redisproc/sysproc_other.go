//go:build !linux

package redisproc

import "syscall"

// sysProcAttr puts the child in its own process group. Outside Linux there
// is no parent-death signal; t.Cleanup kills the child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
