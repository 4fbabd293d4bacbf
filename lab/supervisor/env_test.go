package supervisor

import (
	"os/exec"
	"strings"
	"testing"
)

// TestChildrenGetOnlyTheirEnvironment: a child started through
// StartProcess (as every node, gateway and redis-server is) sees PATH and
// what it was given, not the lab's other variables — a credential in the
// lab's environment stays there.
func TestChildrenGetOnlyTheirEnvironment(t *testing.T) {
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env program")
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "lab-secret-must-not-leak")
	t.Setenv("GOMAXPROCS", "2")
	for _, tc := range []struct {
		name  string
		env   []string
		given string
	}{{"without Env", nil, ""}, {"with ChildEnv", ChildEnv("LEVEE_ADMIN_TOKEN=tok-given"), "LEVEE_ADMIN_TOKEN=tok-given"}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(envBin)
			cmd.Env = tc.env
			var out strings.Builder
			cmd.Stdout = &out
			if err := StartProcess(cmd); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if strings.Contains(got, "lab-secret-must-not-leak") {
				t.Fatalf("the child saw the lab's secret:\n%s", got)
			}
			if !strings.Contains(got, "PATH=") || !strings.Contains(got, "GOMAXPROCS=2") || !strings.Contains(got, tc.given) {
				t.Fatalf("the child lacks PATH, GOMAXPROCS or %q:\n%s", tc.given, got)
			}
		})
	}
}
