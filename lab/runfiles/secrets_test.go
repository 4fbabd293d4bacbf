package runfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/experiment"
)

// TestRunJSONHasNoSecrets: run.json records the run without the lab's API
// keys (they embed part of the admin token), the admin token, or the
// password of a Redis URL; the caller's RunInfo is left as it was.
func TestRunJSONHasNoSecrets(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	exp := &experiment.Experiment{Name: "secrets", Redis: experiment.RedisSpec{Kind: experiment.RedisExternal, URL: "redis://user:hunter2@127.0.0.1:6379/0"},
		Gateway: experiment.GatewaySpec{Config: map[string]any{"admin_token": token}}}
	info := RunInfo{
		Name: "secrets", Args: []string{"levee", "run", "redis://:hunter2@127.0.0.1:1"},
		Experiment: exp,
		Resolved: Resolved{
			Redis: "redis://:hunter2@127.0.0.1:6379",
			Keys:  map[string]string{"P0": "lab-p0-" + token[:8]},
			GatewayConfig: map[string]any{
				"admin_token": token,
				"keys":        []any{map[string]any{"key": "lab-p0-" + token[:8], "tenant": "tenant-p0", "priority": "P0"}},
				"ratelimit":   map[string]any{"store": map[string]any{"kind": "redis", "url": "redis://:hunter2@127.0.0.1:6379"}},
			},
		},
	}
	dir := t.TempDir()
	rec, err := OpenRecorder(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.WriteRunInfo(info); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{token[:8], "hunter2"} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("run.json holds %q:\n%s", secret, b)
		}
	}
	for _, kept := range []string{"tenant-p0", "127.0.0.1:6379", `"kind": "redis"`} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("run.json lost %q", kept)
		}
	}
	if info.Resolved.Keys["P0"] != "lab-p0-"+token[:8] || exp.Redis.URL != "redis://user:hunter2@127.0.0.1:6379/0" {
		t.Error("redaction changed the caller's RunInfo")
	}
}
