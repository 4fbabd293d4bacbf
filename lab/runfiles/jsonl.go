package runfiles

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// jsonlWriter appends one JSON value per line. Each line is built whole and
// written with a single write(2) to a file opened O_APPEND, so a reader (or
// a run killed midway) never sees half a value except, at worst, a torn
// last line, which ReadJSONL skips.
type jsonlWriter struct {
	mu sync.Mutex
	f  *os.File // guarded by mu; nil once closed
}

func createJSONL(path string) (*jsonlWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &jsonlWriter{f: f}, nil
}

// Write appends v as one line.
func (w *jsonlWriter) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return os.ErrClosed
	}
	_, err = w.f.Write(b)
	return err
}

func (w *jsonlWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// ReadJSONL decodes every complete line of r into a T. A last line that is
// not terminated by a newline and does not decode (a run killed while
// writing it) is skipped; any other bad line is an error naming its number.
func ReadJSONL[T any](r io.Reader) ([]T, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var out []T
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		complete := err == nil
		if err != nil && err != io.EOF {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var v T
			if uerr := json.Unmarshal(t, &v); uerr != nil {
				if !complete {
					return out, nil // torn last line
				}
				return out, fmt.Errorf("line %d: %w", n, uerr)
			}
			out = append(out, v)
		}
		if !complete {
			return out, nil
		}
	}
}

// ReadSamples reads samples.jsonl of a run folder.
func ReadSamples(dir string) ([]Sample, error) {
	return readJSONLFile[Sample](filepath.Join(dir, SamplesFile))
}

// ReadEvents reads events.jsonl of a run folder.
func ReadEvents(dir string) ([]Event, error) {
	return readJSONLFile[Event](filepath.Join(dir, EventsFile))
}

func readJSONLFile[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v, err := ReadJSONL[T](f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// writeFileAtomic writes b to a temp file in path's folder and renames it
// over path, so a reader sees the old file or the new one, never a part.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeJSONAtomic writes v as indented JSON with writeFileAtomic.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}
