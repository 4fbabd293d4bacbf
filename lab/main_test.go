package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// leveeBin is the levee binary the tests' labs re-execute for their
// children, built once by TestMain (without -race: the children are other
// processes; the race detector watches the lab in this one).
var leveeBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "levee-lab-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	leveeBin = filepath.Join(dir, "levee")
	cmd := exec.Command("go", "build", "-o", leveeBin, "github.com/levee-lab/levee/cmd/levee")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "lab tests: building levee: %v\n", err)
		return 1
	}
	return m.Run()
}
