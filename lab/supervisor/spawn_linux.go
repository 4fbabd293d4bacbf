package supervisor

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The kernel delivers Pdeathsig when the OS thread that forked a child
// exits, not when the process does. Go may retire threads at any time, so
// every child is forked from one goroutine locked to its thread for the life
// of the process: the children then die with the lab, even on SIGKILL.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func spawnLoop() {
	runtime.LockOSThread() // never unlocked: this thread lives as long as the process
	for r := range spawnReqs {
		r.done <- r.cmd.Start()
	}
}

// StartProcess starts cmd so that it cannot outlive the lab: it gets
// SIGKILL when the lab dies (Pdeathsig, forked from a thread that lives as
// long as the process) and its own process group (Setpgid), so that killing
// -pid reaches anything it starts. A cmd without its own Env gets
// ChildEnv(), not the lab's whole environment. Every child of the lab
// (nodes, gateways, redis-server) must be started through it. It returns
// cmd.Start's error.
func StartProcess(cmd *exec.Cmd) error {
	if cmd.Env == nil {
		cmd.Env = ChildEnv()
	}
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go spawnLoop()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnReqs <- r
	return <-r.done
}
