package runfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// runFolderName is "<UTC time>-<name>".
func runFolderName(t time.Time, name string) string {
	return t.UTC().Format("20060102-150405") + "-" + name
}

// ErrRunDirNotEmpty is returned (wrapped) by ResolveRunDir for an --out
// folder that already holds files, unless forced.
var ErrRunDirNotEmpty = errors.New("run folder is not empty")

// ResolveRunDir returns the run folder: out when given, else
// runs/<time>-<name> under runsDir (default "runs"), made unique. An out
// folder that exists and is not empty is refused (a second run would
// append to the first one's files) unless force; forced, the files a run
// writes are removed from it first (run.json, the JSONL files, the
// summary, the reports, gateway configs, logs/), and nothing else.
func ResolveRunDir(out, runsDir, name string, now time.Time, force bool) (string, error) {
	if out != "" {
		return out, prepareOut(out, force)
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

// prepareOut checks an --out folder, clearing a previous run's files when
// forced.
func prepareOut(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("run folder %s: %w", dir, err)
	case len(ents) == 0:
		return nil
	case !force:
		return fmt.Errorf("run folder %s: %w (it holds %d entries); pick another --out, or add --force to replace the run in it", dir, ErrRunDirNotEmpty, len(ents))
	}
	for _, e := range ents {
		if !runWrites(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("run folder %s: clearing the previous run: %w", dir, err)
		}
	}
	return nil
}

// runWrites reports whether a run writes the entry called name.
func runWrites(name string) bool {
	switch name {
	case RunFile, SamplesFile, EventsFile, SummaryFile, ReportFile, LogsDir:
		return true
	}
	return strings.HasSuffix(name, ".html") || (strings.HasPrefix(name, "gateway-") && strings.HasSuffix(name, ".yaml")) ||
		strings.HasPrefix(name, "."+SummaryFile+".") || strings.HasPrefix(name, "."+RunFile+".")
}
