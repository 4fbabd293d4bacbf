package runfiles

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ReportWriter writes a report of the run folder dir from its files (the
// text report, an HTML report). The Recorder calls its report writers
// once the run's files are complete.
type ReportWriter func(dir string) error

// Recorder writes one run folder: run.json, samples.jsonl and events.jsonl
// appended line by line (each line whole, so a killed run reads back), then
// summary.json (atomically), the children's logs and the reports. All
// methods are safe for concurrent use.
type Recorder struct {
	dir     string
	samples *jsonlWriter
	events  *jsonlWriter
	reports []ReportWriter
	errs    io.Writer // where write errors are reported (nil: nowhere)

	mu   sync.Mutex
	lost WriteErrors // guarded by mu: the lines not written, the first error
}

// RecorderOption configures a Recorder.
type RecorderOption func(*Recorder)

// WithReports adds report writers run by Finish after the text report
// (report.txt, always written).
func WithReports(w ...ReportWriter) RecorderOption {
	return func(r *Recorder) { r.reports = append(r.reports, w...) }
}

// WithErrorLog reports the recorder's first write error on w as it
// happens, and at Finish how many lines each file lacks when any write
// failed.
func WithErrorLog(w io.Writer) RecorderOption { return func(r *Recorder) { r.errs = w } }

// OpenRecorder creates dir and its files and writes run.json (without its
// secrets: API keys, tokens, URL passwords).
func OpenRecorder(dir string, info RunInfo, opts ...RecorderOption) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	if err := writeJSONAtomic(filepath.Join(dir, RunFile), redactRunInfo(info)); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	s, err := createJSONL(filepath.Join(dir, SamplesFile))
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	e, err := createJSONL(filepath.Join(dir, EventsFile))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("events: %w", err)
	}
	r := &Recorder{dir: dir, samples: s, events: e, reports: []ReportWriter{WriteTextReport}}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Dir is the run folder.
func (r *Recorder) Dir() string { return r.dir }

// WriteRunInfo rewrites run.json (the lab writes it again once every child
// has started and its addresses are known).
func (r *Recorder) WriteRunInfo(info RunInfo) error {
	return writeJSONAtomic(filepath.Join(r.dir, RunFile), redactRunInfo(info))
}

// WriteSample appends s to samples.jsonl.
func (r *Recorder) WriteSample(s Sample) error {
	return r.reported(r.samples.Write(s), &r.lost.SamplesLost, SamplesFile)
}

// WriteEvent appends e to events.jsonl.
func (r *Recorder) WriteEvent(e Event) error {
	return r.reported(r.events.Write(e), &r.lost.EventsLost, EventsFile)
}

// reported counts a failed write (err not nil) in *n, reports the first
// on the error log and returns err, wrapped with the file's name.
func (r *Recorder) reported(err error, n *int, file string) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", file, err)
	r.mu.Lock()
	*n++
	first := r.lost.First == ""
	if first {
		r.lost.First = err.Error()
	}
	r.mu.Unlock()
	if first && r.errs != nil {
		fmt.Fprintf(r.errs, "levee: recording to %s: %v\n", r.dir, err)
	}
	return err
}

// WriteErrors is how many lines the recorder failed to write to each
// file so far, and the first error; nil when none failed.
func (r *Recorder) WriteErrors() *WriteErrors {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost.First == "" {
		return nil
	}
	w := r.lost
	return &w
}

// Close closes samples.jsonl and events.jsonl (a recording that ends
// without a summary, such as one whose lab failed to start).
func (r *Recorder) Close() error {
	err1 := r.samples.Close()
	err2 := r.events.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

// Finish completes the run folder: summary.json (atomically), a copy of the
// children's logs from logsDir (when they are elsewhere), then closes the
// files and writes the reports. It tries every step and returns their
// errors joined. When lines failed to be written, the summary says how
// many (Summary.WriteErrors, also in report.txt) and so does the error
// log.
func (r *Recorder) Finish(sum Summary, logsDir string) error {
	var errs []error
	if w := r.WriteErrors(); w != nil {
		sum.WriteErrors = w
		if r.errs != nil {
			fmt.Fprintf(r.errs, "levee: recording to %s: %s\n", r.dir, w)
		}
	}
	if err := writeJSONAtomic(filepath.Join(r.dir, SummaryFile), sum); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", SummaryFile, err))
	}
	if err := copyLogs(logsDir, filepath.Join(r.dir, LogsDir)); err != nil {
		errs = append(errs, fmt.Errorf("copy logs: %w", err))
	}
	if err := r.Close(); err != nil {
		errs = append(errs, err)
	}
	for _, w := range r.reports {
		if err := w(r.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// copyLogs copies the children's logs from src into the run folder (for
// recordings whose children were started before recording began).
func copyLogs(src, dst string) error {
	if src == "" || filepath.Clean(src) == filepath.Clean(dst) {
		return nil
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
