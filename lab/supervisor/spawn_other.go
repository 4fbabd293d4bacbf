//go:build !linux

package supervisor

import (
	"fmt"
	"os/exec"
	"runtime"
)

// StartProcess refuses to start cmd: the lab's children must die with it
// even when it is SIGKILLed, and only Linux's Pdeathsig gives that (see
// spawn_linux.go); the lab also reads the gateways' memory from /proc.
// The commands that start no child (gateway, fakemodel, loadtest, report,
// plan, lessons) work elsewhere.
func StartProcess(cmd *exec.Cmd) error {
	return fmt.Errorf("starting %s: the lab runs on Linux only (its children die with it by Pdeathsig, and it reads their memory from /proc); this is %s: run the lab in a Linux VM or container", cmd.Path, runtime.GOOS)
}
