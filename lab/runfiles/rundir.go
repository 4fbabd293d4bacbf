package runfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runFolderName is "<UTC time>-<name>".
func runFolderName(t time.Time, name string) string {
	return t.UTC().Format("20060102-150405") + "-" + name
}

// ResolveRunDir returns the run folder: out when given, else
// runs/<time>-<name> under runsDir (default "runs"), made unique.
func ResolveRunDir(out, runsDir, name string, now time.Time) (string, error) {
	if out != "" {
		return out, nil
	}
	if runsDir == "" {
		runsDir = "runs"
	}
	base := filepath.Join(runsDir, runFolderName(now, name))
	dir := base
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return dir, nil
		}
		dir = fmt.Sprintf("%s-%d", base, i)
		if i > 1000 {
			return "", fmt.Errorf("run folder: too many runs named %s", base)
		}
	}
}
