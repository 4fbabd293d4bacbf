package redisproc

import "syscall"

// sysProcAttr puts the child in its own process group and kills it when its
// parent dies, even when the parent is killed before its cleanups run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
