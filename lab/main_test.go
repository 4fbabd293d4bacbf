package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/levee-lab/levee/lab/experiment"
)

// leveeBin is the levee binary the tests' labs re-execute for their
// children, built once by TestMain (without -race: the children are other
// processes; the race detector watches the lab in this one).
var leveeBin string

func TestMain(m *testing.M) {
	if bin := os.Getenv(holdLabEnv); bin != "" {
		os.Exit(holdLab(bin))
	}
	os.Exit(testMain(m))
}

// holdLabEnv, set to a levee binary, makes this test binary a lab process
// of its own (holdLab) instead of running tests.
const holdLabEnv = "LEVEE_LAB_TEST_HOLD"

// holdLab opens a small lab whose children are bin, in a temporary work
// folder of its own, prints "workdir DIR" and waits to be killed.
func holdLab(bin string) int {
	exp, err := experiment.ParseExperiment([]byte(holdLabExperiment))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := Open(context.Background(), exp, Options{Executable: bin})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("workdir %s\n", l.workDir)
	select {}
}

const holdLabExperiment = "name: hold\nduration: 10m\nstart_rate: 1\nnodes: {count: 1}\n"

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
