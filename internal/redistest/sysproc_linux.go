package redistest

import "syscall"

// sysProcAttr makes the child die with the test binary, even when the test
// process is killed before its cleanups run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
