package runfiles

import (
	"encoding/json"
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
var ErrRunDirNotEmpty = errors.New("not empty")

// ErrNoPreviousRun is returned (wrapped) by ResolveRunDir for a forced
// --out folder that holds files but no previous run: no run.json, or one
// that is not a run's (no name or start time).
var ErrNoPreviousRun = errors.New("no previous run in it")

// maxSameNameRuns bounds the "-2", "-3", … suffixes ResolveRunDir tries.
const maxSameNameRuns = 1000

// ResolveRunDir returns the run folder: out when given, else
// runs/<time>-<name> under runsDir (default "runs"), made unique.
//
// An out folder that exists and is not empty is refused (a second run would
// append to the first one's files) unless force. Forced, the folder must
// hold a previous run (a run.json naming it: every run writes run.json
// first); the files a run writes are then removed from it, and nothing
// else (see removeRunFiles). A folder with files but no previous run is
// refused with ErrNoPreviousRun and left untouched.
//
// force without out is an error: a runs/<time>-<name> folder is always new.
// A runsDir that exists but is not a folder, or cannot be examined, is an
// error at once.
func ResolveRunDir(out, runsDir, name string, now time.Time, force bool) (string, error) {
	if out != "" {
		return out, prepareOut(out, force)
	}
	if force {
		return "", errors.New("run folder: force replaces the run in an out folder, and none was given")
	}
	if runsDir == "" {
		runsDir = "runs"
	}
	switch st, err := os.Stat(runsDir); {
	case errors.Is(err, os.ErrNotExist):
		// Made with the run folder.
	case err != nil:
		return "", fmt.Errorf("runs folder %s: %w", runsDir, err)
	case !st.IsDir():
		return "", fmt.Errorf("runs folder %s: not a folder", runsDir)
	}
	base := filepath.Join(runsDir, runFolderName(now, name))
	dir := base
	for i := 2; i <= maxSameNameRuns; i++ {
		_, err := os.Stat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return dir, nil
		case err != nil:
			return "", fmt.Errorf("run folder %s: %w", dir, err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
	return "", fmt.Errorf("run folder: too many runs named %s", base)
}

// prepareOut checks an --out folder: a missing or empty folder is used as
// is; one that holds files is refused unless force, and forced it must hold
// a previous run, whose files are then removed.
func prepareOut(dir string, force bool) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("run folder %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("run folder %s: not a folder", dir)
	}
	ents, err := os.ReadDir(dir)
	switch {
	case err != nil:
		return fmt.Errorf("run folder %s: %w", dir, err)
	case len(ents) == 0:
		return nil
	}
	prev := checkPreviousRun(dir)
	switch {
	case !force && prev != nil:
		return fmt.Errorf("run folder %s: %w (it holds %d entries, and no previous run for --force to replace: %w); pick another --out", dir, ErrRunDirNotEmpty, len(ents), prev)
	case !force:
		return fmt.Errorf("run folder %s: %w (it holds %d entries); pick another --out, or add --force to replace the run in it", dir, ErrRunDirNotEmpty, len(ents))
	case prev != nil:
		return fmt.Errorf("run folder %s: %w; --force removes only a previous run's files, so nothing was removed: pick another --out", dir, prev)
	}
	if err := removeRunFiles(dir); err != nil {
		return fmt.Errorf("run folder %s: clearing the previous run: %w", dir, err)
	}
	return nil
}

// checkPreviousRun returns nil when dir holds a run's run.json (one that
// decodes and names the run and its start), else an error wrapping
// ErrNoPreviousRun (or the error reading run.json).
func checkPreviousRun(dir string) error {
	path := filepath.Join(dir, RunFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: no %s (every run writes one)", ErrNoPreviousRun, RunFile)
	case err != nil:
		return fmt.Errorf("%s: %w", RunFile, err)
	}
	var info RunInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return fmt.Errorf("%w: %s is not a run's: %w", ErrNoPreviousRun, RunFile, err)
	}
	if info.Name == "" || info.Started.IsZero() {
		return fmt.Errorf("%w: %s is not a run's (no name or started)", ErrNoPreviousRun, RunFile)
	}
	return nil
}

// removeRunFiles removes from dir the files a run writes there and nothing
// else: run.json, samples.jsonl, events.jsonl, summary.json, report.txt,
// report.html, the temporary files of their atomic writes, the gateways'
// configs (gateway-<i>.yaml), and in logs/ the children's logs (see
// removeRunLogs). A folder is removed only once it is empty. An entry with
// a run's file name that is a folder is left alone.
func removeRunFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.Name() == LogsDir && e.IsDir():
			if err := removeRunLogs(path); err != nil {
				return err
			}
		case !e.IsDir() && runTopFile(e.Name()):
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// runTopFile reports whether a run writes the file called name at the top
// of its folder.
func runTopFile(name string) bool {
	atomic := []string{RunFile, SummaryFile, ReportFile, HTMLReportFile}
	switch name {
	case SamplesFile, EventsFile:
		return true
	}
	for _, f := range atomic {
		// writeFileAtomic's temporary file: "." + name + "." + digits.
		if name == f || isNumbered(name, "."+f+".", "") {
			return true
		}
	}
	// lab/supervisor writes gateway-<i>.yaml.
	return isNumbered(name, "gateway-", ".yaml")
}

// Redis cluster nodes' folders under logs/ (internal/redisproc): node-<i>
// with its log, cluster config and replication snapshot.
const redisClusterDir = "redis-cluster"

// removeRunLogs removes from a run's logs folder the logs a run writes
// there: node-<i>.log, gateway-<i>.log, redis.log, and under
// redis-cluster/node-<i>/ a cluster node's redis.log, nodes.conf, dump.rdb
// and Redis's temporary files for them (nodes.conf.tmp-…, temp-….rdb).
// Each folder is then removed if it is empty; anything else stays.
func removeRunLogs(logs string) error {
	ents, err := os.ReadDir(logs)
	if err != nil {
		return err
	}
	for _, e := range ents {
		path := filepath.Join(logs, e.Name())
		switch {
		case e.Name() == redisClusterDir && e.IsDir():
			if err := removeRedisClusterLogs(path); err != nil {
				return err
			}
		case !e.IsDir() && runLogFile(e.Name()):
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	return removeIfEmpty(logs)
}

// runLogFile reports whether a run writes the file called name in logs/.
func runLogFile(name string) bool {
	// lab/supervisor: <kind>-<i>.log; internal/redisproc: redis.log.
	return name == "redis.log" || isNumbered(name, "node-", ".log") || isNumbered(name, "gateway-", ".log")
}

// removeRedisClusterLogs empties logs/redis-cluster of a run's files.
func removeRedisClusterLogs(dir string) error {
	nodes, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if !n.IsDir() || !isNumbered(n.Name(), "node-", "") {
			continue
		}
		nodeDir := filepath.Join(dir, n.Name())
		files, err := os.ReadDir(nodeDir)
		if err != nil {
			return err
		}
		for _, f := range files {
			if f.IsDir() || !redisNodeFile(f.Name()) {
				continue
			}
			if err := os.Remove(filepath.Join(nodeDir, f.Name())); err != nil {
				return err
			}
		}
		if err := removeIfEmpty(nodeDir); err != nil {
			return err
		}
	}
	return removeIfEmpty(dir)
}

// redisNodeFile reports whether a cluster node's redis-server writes the
// file called name in its folder.
func redisNodeFile(name string) bool {
	switch name {
	case "redis.log", "nodes.conf", "dump.rdb":
		return true
	}
	return strings.HasPrefix(name, "nodes.conf.tmp-") ||
		(strings.HasPrefix(name, "temp-") && strings.HasSuffix(name, ".rdb"))
}

// removeIfEmpty removes the folder dir when it holds nothing.
func removeIfEmpty(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 0 {
		return err
	}
	return os.Remove(dir)
}

// isNumbered reports whether name is prefix, one or more ASCII digits, then
// suffix.
func isNumbered(name, prefix, suffix string) bool {
	mid, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if mid, ok = strings.CutSuffix(mid, suffix); !ok || mid == "" {
		return false
	}
	for _, c := range mid {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
