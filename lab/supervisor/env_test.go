package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
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

// TestGatewayConfigIsPrivate: the gateway's config file holds the admin
// token, so it is written 0600 — also over an older, laxer file of the
// same name (a --force rerun into the same folder).
func TestGatewayConfigIsPrivate(t *testing.T) {
	dir := t.TempDir()
	const token = "0123456789abcdef-private"
	path := filepath.Join(dir, "gateway-0.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Supervisor{cfg: Config{WorkDir: dir, GatewayConfig: func(listen, admin string, nodes []string, redisURL string) ([]byte, error) {
		return []byte("admin_token: " + token + "\nlisten: " + listen + "\n"), nil
	}}}
	args := s.gatewayArgs(0, "", "")
	if len(args) != 3 || args[2] != path {
		t.Fatalf("args %q", args)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), token) {
		t.Fatalf("%s: mode %v, content %q; want 0600 with the config", path, fi.Mode().Perm(), b)
	}
}
