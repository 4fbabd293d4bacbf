package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/levee-lab/levee/lab/lesson"
)

// embeddedLessons finds a lesson built into the binary by name.
func embeddedLessons(t *testing.T) Lessons {
	ls, err := lesson.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) *experiment {
		if l, ok := lesson.ByName(ls, name); ok {
			return l.Experiment
		}
		return nil
	}
}

func planText(t *testing.T, dir string, lessons Lessons, over Inputs) string {
	t.Helper()
	parts, err := ReadRun(dir, lessons)
	if err != nil {
		t.Fatal(err)
	}
	parts.Inputs.Override(over)
	p, err := New(parts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReferenceRunsGolden plans every reference run of experiments/: full
// run folders (run.json, samples) and summary-only ones, whose setup comes
// from the lesson of the same name.
func TestReferenceRunsGolden(t *testing.T) {
	dirs, err := filepath.Glob("../../experiments/reference/*")
	if err != nil {
		t.Fatal(err)
	}
	lessons := embeddedLessons(t)
	n := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		n++
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			out := planText(t, dir, lessons, Inputs{})
			_, err := os.Stat(filepath.Join(dir, "run.json"))
			full := err == nil // a full run folder; else summary.json only
			wants := []string{"QPS_safe = C / T", "limit = QPS × P99 / N", "the setup is lesson " + name + "'s"}
			if full {
				wants[2] = "run.json"
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("plan lacks %q", want)
				}
			}
			switch {
			case strings.Contains(out, "the bulkhead was off"):
			case full && !strings.Contains(out, "limit, ") && !strings.Contains(out, "at the end (median of the last 5 s)"):
				t.Error("part 7 of a full run folder does not say what its limit did")
			case !full && !strings.Contains(out, "not recorded: this folder has no samples"):
				t.Error("part 7 says neither that samples are missing nor that there was no limit")
			}
			golden.RequireEqual(t, []byte(out))
		})
	}
	if n < 7 {
		t.Errorf("%d reference runs, want at least 7", n)
	}
}

// TestLesson03Acceptance: issue 15's acceptance, with its numbers: 3 nodes
// × 16 slots at a lognormal mean of 224 ms give QPS_safe ≈ 214.7 req/s and
// a per-instance limit of 214.7 × 0.6 s / 1 ≈ 128.8 → 129.
func TestLesson03Acceptance(t *testing.T) {
	out := planText(t, "../../experiments/reference/03-priority-shedding", embeddedLessons(t), Inputs{})
	for _, want := range []string{
		"QPS_safe = C / T = 48 / 0.224 s = 214.7 req/s",
		"limit = QPS × P99 / N = 214.7 req/s × 0.6 s / 1 = 128.8 → 129 calls in flight",
		"this run: static limit 48 per gateway",
		"req/s finished while every slot was busy (", // the figure is the golden's
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

// TestRecordedRunGolden plans a real recorded run (04-node-loss --quick,
// with run.json and samples), a what-if on it, and the same run killed
// before its summary (samples only, the last line torn).
func TestRecordedRunGolden(t *testing.T) {
	tests := []struct {
		name, dir string
		over      Inputs
		want      []string
	}{
		{"recorded", "testdata/runs/04-node-loss-quick", Inputs{}, []string{
			"run.json", "gradient limit, 84 samples", "node_kill #2", "at the end (median of the last 5 s)",
		}},
		{"what-if", "testdata/runs/04-node-loss-quick", Inputs{Gateways: Of(3, FromFlag), P99: Of(900*time.Millisecond, FromFlag)}, []string{
			"gateways N           3                                        flag", "(lognormal through p50 and p99)", "/ 3 =",
		}},
		{"killed", "testdata/runs/04-killed", Inputs{}, []string{
			"the run was killed before its summary", "node_kill #2",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := planText(t, tt.dir, nil, tt.over)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("plan lacks %q", w)
				}
			}
			golden.RequireEqual(t, []byte(out))
		})
	}
}

// TestObservedPhases checks the phase split of the recorded run against
// what the lab's summary says about the same node kill.
func TestObservedPhases(t *testing.T) {
	parts, err := ReadRun("testdata/runs/04-node-loss-quick", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := parts.Observed
	if len(o.Phases) != 3 || o.Phases[0].Label != "" || !strings.HasPrefix(o.Phases[1].Label, "node_kill") || o.Phases[2].Label != "" {
		t.Fatalf("phases %+v", o.Phases)
	}
	if len(o.Kills) != 1 {
		t.Fatalf("kills %+v", o.Kills)
	}
	kill, during := o.Kills[0], o.Phases[1]
	if during.LiveSlots != kill.LiveSlots || during.From < kill.At || during.From > kill.At+1 {
		t.Errorf("the kill phase %+v does not match the summary's kill %+v", during, kill)
	}
	if o.Phases[0].LiveSlots != 48 || o.Phases[2].LiveSlots != 48 {
		t.Errorf("live slots outside the kill: %v, %v", o.Phases[0].LiveSlots, o.Phases[2].LiveSlots)
	}
	if o.ServiceFrom != "samples" || o.ServiceT <= 0 || o.EndLimit <= 0 {
		t.Errorf("service %v from %q, end limit %v", o.ServiceT, o.ServiceFrom, o.EndLimit)
	}
}

func TestReadRunErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(p)
	}
	summary, err := os.ReadFile("../../experiments/reference/03-priority-shedding/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	unknown := strings.Replace(string(summary), `"name": "03-priority-shedding"`, `"name": "99-mine"`, 1)
	tests := []struct {
		name, dir, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"a file", write("file/x.json", "{}") + "/x.json", "not a folder"},
		{"empty folder", write("empty/.keep", ""), "not a run folder"},
		{"bad summary", write("badsum/summary.json", "{"), "summary.json"},
		{"bad run.json", write("badinfo/run.json", "nope"), "run.json"},
		{"bad samples", write("badsamples/samples.jsonl", "{\"t\":1}\nnot json\n{}\n"), "samples.jsonl"},
		{"unknown lesson", write("unknown/summary.json", unknown), `no lesson named "99-mine"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRun(tt.dir, embeddedLessons(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestTargetIsWhatTheRunAskedFor: the target load of a run folder is the
// peak rate its samples recorded, not the experiment's stages: a dashboard
// recording whose rate was raised by hand, or a traffic spike, offered more
// than run.json's schedule says. Here the recorded 04-node-loss run (stages
// up to 640 req/s) is rewritten as if a ×3 spike had run from 5 s to 8 s.
func TestTargetIsWhatTheRunAskedFor(t *testing.T) {
	src := "testdata/runs/04-node-loss-quick"
	dir := t.TempDir()
	for _, f := range []string{"run.json", "summary.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "samples.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	spiked := 0
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if e := m["elapsed_s"].(float64); e >= 5 && e <= 8 {
			m["target_rps"] = 3 * m["target_rps"].(float64)
			spiked++
		}
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(enc, '\n'))
	}
	if spiked == 0 {
		t.Fatal("no sample between 5 s and 8 s")
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	text := planText(t, dir, nil, Inputs{})
	for _, want := range []string{
		"target load          1,920 req/s (the peak offered)",
		"slots = ⌈target × T⌉ = ⌈1,920 req/s × 0.224 s⌉ = 430 slots",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
}
