package lesson

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/charmbracelet/x/exp/golden"
)

func lessonYAML(name, title, articles, desc string) string {
	s := "name: " + name + "\ntitle: \"" + title + "\"\n"
	if articles != "" {
		s += "articles: " + articles + "\n"
	}
	return s + "description: |\n  " + desc + "\nduration: 10s\n"
}

var testFS = fstest.MapFS{
	"10-queues.yaml":     {Data: []byte(lessonYAML("10-queues", "10 · Queues do not fix overload", `["000"]`, "A big queue. Only adds latency."))},
	"02-semaphore.yaml":  {Data: []byte(lessonYAML("02-semaphore", "02 · The semaphore", `["000"]`, "One node, 50 slots,\n  1.2 s each, offered three times what it can serve, with a bounded queue. Then more."))},
	"02b-compare.yaml":   {Data: []byte(lessonYAML("02b-compare", "02b · The same, compared", "", "No article named."))},
	"free.yaml":          {Data: []byte(lessonYAML("free-play", "Free play", `["001", "002"]`, "No number at all"))},
	"notes.txt":          {Data: []byte("not a lesson")},
	"sub/ignored.yaml":   {Data: []byte("not at the root")},
	"04-node-loss.yaml":  {Data: []byte(lessonYAML("04-node-loss", "04 · Node loss", `["000"]`, "Kill one. Watch."))},
	"04b-node-loss.yaml": {Data: []byte(lessonYAML("04-node-loss-static", "04b · Node loss, static", `["000"]`, "Static. Compare."))},
}

func TestLoadOrderAndFields(t *testing.T) {
	ls, err := Load(testFS)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.Number+" "+l.Name)
	}
	want := "02 02-semaphore|02b 02b-compare|04 04-node-loss|04b 04-node-loss-static|10 10-queues|- free-play"
	if strings.Join(got, "|") != want {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	sem := ls[0]
	if sem.Title != "The semaphore" || sem.Line != "One node, 50 slots, 1.2 s each, offered three times what it can serve, with a bounded queue." || sem.File != "02-semaphore.yaml" {
		t.Errorf("fields: %+v", sem)
	}
	if len(sem.Articles) != 1 || sem.Articles[0] != "000" || sem.Experiment == nil || len(sem.Source) == 0 {
		t.Errorf("articles %q, experiment %v, source %d bytes", sem.Articles, sem.Experiment, len(sem.Source))
	}
	if free := ls[5]; free.Title != "Free play" || free.Line != "No number at all" {
		t.Errorf("unnumbered lesson: %+v", free)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"empty", fstest.MapFS{"README.md": {Data: []byte("# hi")}}, "no *.yaml files"},
		{"broken yaml", fstest.MapFS{"01-a.yaml": {Data: []byte("name: [\n")}}, "lesson 01-a.yaml"},
		{"invalid lesson", fstest.MapFS{"01-a.yaml": {Data: []byte("name: a\nduration: 1s\nbogus: 1\n")}}, "line 3: field bogus"},
		{"bad article", fstest.MapFS{"01-a.yaml": {Data: []byte("name: a\nduration: 1s\narticles: [\"9\"]\n")}}, "articles.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.fsys)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestFind(t *testing.T) {
	ls, err := Load(testFS)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, want string // want "" = not found
		ambiguous bool   // the error names the candidates
	}{
		{"02-semaphore", "02-semaphore", false},
		{"02", "02-semaphore", false},
		{"2", "02-semaphore", false},
		{"04b", "04-node-loss-static", false},
		{"04", "04-node-loss", false},
		{"04b-node-loss", "04-node-loss-static", false}, // the file name
		{"experiments/10-queues.yaml", "10-queues", false},
		{"free", "free-play", false}, // a unique prefix
		{"04-node", "", true},        // two lessons start so
		{"99", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		l, err := Find(ls, tt.key)
		if tt.want != "" {
			if err != nil || l.Name != tt.want {
				t.Errorf("Find(%q) = %q, %v; want %q", tt.key, l.Name, err, tt.want)
			}
			continue
		}
		want := ErrNoLesson
		if tt.ambiguous {
			want = ErrAmbiguous
		}
		if !errors.Is(err, want) {
			t.Errorf("Find(%q) = %q, %v; want an error wrapping %q", tt.key, l.Name, err, want)
		}
	}
}

// TestFindAmbiguousNumber: two lessons numbered alike (as 06-redis-outage
// and 06-redis-cluster once both were "06") are not told apart by their
// order in the catalogue: Find refuses the number and names both, while
// each name, file name and a unique prefix still finds its lesson.
func TestFindAmbiguousNumber(t *testing.T) {
	ls, err := Load(fstest.MapFS{
		"06-redis-outage.yaml":  {Data: []byte(lessonYAML("06-redis-outage", "06 · Redis outage", `["001"]`, "One server dies."))},
		"06-redis-cluster.yaml": {Data: []byte(lessonYAML("06-redis-cluster", "06 · Redis Cluster", `["001"]`, "A master dies."))},
		"07-llm-limit.yaml":     {Data: []byte(lessonYAML("07-llm-limit", "07 · LLM-like nodes", `["000"]`, "Slow answers."))},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"06", "6"} {
		l, err := Find(ls, key)
		if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "06-redis-outage") || !strings.Contains(err.Error(), "06-redis-cluster") {
			t.Errorf("Find(%q) = %q, %v; want an ambiguity naming both lessons", key, l.Name, err)
		}
	}
	for key, want := range map[string]string{"06-redis-outage": "06-redis-outage", "06-redis-cluster.yaml": "06-redis-cluster", "06-redis-c": "06-redis-cluster", "7": "07-llm-limit"} {
		if l, err := Find(ls, key); err != nil || l.Name != want {
			t.Errorf("Find(%q) = %q, %v; want %q", key, l.Name, err, want)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"One. Two.", "One."},
		{"Mean 1.2 s per call, so 42 req/s.\nMore.", "Mean 1.2 s per call, so 42 req/s."},
		{"  spread\n  over   lines ", "spread over lines"},
		{"", ""},
	} {
		if got := FirstSentence(tt.in); got != tt.want {
			t.Errorf("FirstSentence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestEmbeddedLessons: every lesson of experiments/ is in the binary, parses,
// has a number and names the seed articles it teaches.
func TestEmbeddedLessons(t *testing.T) {
	ls, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../experiments/*.yaml")
	if len(ls) != len(files) || len(ls) == 0 {
		t.Fatalf("%d embedded lessons, %d files in experiments/", len(ls), len(files))
	}
	byNumber := map[string]string{}
	for _, l := range ls {
		if l.Number == "-" || len(l.Articles) == 0 || l.Line == "" {
			t.Errorf("%s: number %q, articles %q, line %q", l.File, l.Number, l.Articles, l.Line)
		}
		if other, dup := byNumber[l.Number]; dup {
			t.Errorf("%s and %s are both lesson %s: `levee lab %s` could not tell them apart", other, l.Name, l.Number, l.Number)
		}
		byNumber[l.Number] = l.Name
		if got, err := Find(ls, l.Number); err != nil || got.Name != l.Name {
			t.Errorf("Find(%q) = %q, %v; want %s", l.Number, got.Name, err, l.Name)
		}
	}
	if n := MaxOutstanding(ls); n < 1000 {
		t.Errorf("MaxOutstanding = %d", n)
	}
}

func TestWriteListGolden(t *testing.T) {
	ls, err := Load(testFS)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		width int
	}{{"whole", 0}, {"80", 80}, {"60", 60}, {"40", 40}} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteList(&b, ls, tt.width); err != nil {
				t.Fatal(err)
			}
			if tt.width > 0 {
				for i, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
					if n := runes(line); n > tt.width && i > 0 { // the header may overflow a tiny width
						t.Errorf("line %d is %d columns, wider than %d: %q", i+1, n, tt.width, line)
					}
				}
			}
			golden.RequireEqual(t, b.Bytes())
		})
	}
}

func TestWriteDetailGolden(t *testing.T) {
	ls, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Find(ls, "03")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDetail(&b, l, 100); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.Bytes())
}

// TestLoadDir: a folder's lessons carry their path on disk; a folder that
// is missing, a file, or empty is an error saying which.
func TestLoadDir(t *testing.T) {
	good := t.TempDir()
	writeFile(t, filepath.Join(good, "02-semaphore.yaml"), lessonYAML("02-semaphore", "02 · The semaphore", `["000"]`, "One node."))
	file := filepath.Join(good, "02-semaphore.yaml")
	empty := t.TempDir()
	broken := t.TempDir()
	writeFile(t, filepath.Join(broken, "01-bad.yaml"), "name: x\nduration: 1s\nwings: 2\n")
	tests := []struct {
		name, dir string
		want      []string // fragments of the error; nil: no error
	}{
		{"a folder", good, nil},
		{"missing", filepath.Join(good, "nope"), []string{"folder " + filepath.Join(good, "nope") + " does not exist"}},
		{"a file", file, []string{file + " is a file, not a folder"}},
		{"empty", empty, []string{"no *.yaml files in " + empty}},
		{"broken", broken, []string{broken + ": lesson 01-bad.yaml", "wings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, err := LoadDir(tt.dir)
			if tt.want == nil {
				if err != nil || len(ls) != 1 || ls[0].Path != file {
					t.Fatalf("LoadDir = %+v, %v; want one lesson at %s", ls, err, file)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; lessons %+v", ls)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "no *.yaml") && tt.name != "empty" {
				t.Errorf("error %q calls a missing folder or a file empty", err)
			}
		})
	}
}

// TestLoadRootNotAFolder: Load over a root that is missing or a file says
// so instead of finding no lessons.
func TestLoadRootNotAFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	writeFile(t, file, "x")
	for _, tt := range []struct{ name, root, want string }{
		{"missing", filepath.Join(dir, "nope"), "the folder does not exist"},
		{"a file", file, "not a directory"}, // os.DirFS cannot stat "." inside a file
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(os.DirFS(tt.root)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestWriteDetailFromFolder: a lesson read from a folder shows its real
// path and commands that name the file, since the binary does not know it
// by name.
func TestWriteDetailFromFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my lessons")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "x.yaml"), lessonYAML("t", "01 · T", "", "T."))
	ls, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDetail(&b, ls[0], 0); err != nil {
		t.Fatal(err)
	}
	q := "'" + filepath.Join(dir, "x.yaml") + "'"
	out := b.String()
	for _, w := range []string{"file " + filepath.Join(dir, "x.yaml") + "\n", "levee lab " + q + "\n", "levee run --quick " + q + "\n", "the file itself:   " + q + "\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("detail lacks %q:\n%s", w, out)
		}
	}
	for _, bad := range []string{"experiments/x.yaml", "levee lab t", "--quick t\n", "levee lessons t", "in the dashboard"} {
		if strings.Contains(out, bad) {
			t.Errorf("detail has %q, which does not work for a lesson outside the binary:\n%s", bad, out)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"experiments/03.yaml", "experiments/03.yaml"},
		{"/tmp/my lessons/x.yaml", "'/tmp/my lessons/x.yaml'"},
		{"it's.yaml", `'it'\''s.yaml'`},
		{"$HOME/x.yaml", "'$HOME/x.yaml'"},
		{"", "''"},
	} {
		if got := ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
