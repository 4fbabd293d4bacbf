// Package lesson is the catalogue of lessons: the experiment files of
// experiments/ (embedded in the binary), with the number, title, seed
// articles and one-line summary a lesson list shows.
package lesson

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/levee-lab/levee/experiments"
	"github.com/levee-lab/levee/lab/experiment"
)

// Lesson is one lesson file.
type Lesson struct {
	// Number is the lesson's number as people say it: "03", "04b". It is
	// the title's prefix before " · ", else the name's leading digits.
	Number string
	Name   string // the experiment's name, e.g. "03-priority-shedding"
	// Title is the title without its number prefix.
	Title string
	// Articles are the seed articles it teaches (the experiment's
	// articles field), main one first; empty when the file names none.
	Articles []string
	// Line is the first sentence of the description: one line for a list.
	Line string
	File string // file name within the catalogue's FS
	// Path is the file's path on disk for a lesson read by LoadDir, "" for
	// one built into the binary (Embedded) or read from another FS.
	Path string
	// Source is the file as read, for `levee lessons NAME --yaml` and for
	// starting the lesson from the binary alone.
	Source     []byte
	Experiment *experiment.Experiment // parsed and normalized
}

// Embedded returns the lessons built into the binary (experiments/*.yaml).
func Embedded() ([]Lesson, error) { return Load(experiments.FS) }

// LoadDir reads the lessons of the folder dir as Load does, and sets each
// one's Path. A dir that does not exist or is not a folder is an error
// saying so (not an empty catalogue); so is a folder with no *.yaml file.
func LoadDir(dir string) ([]Lesson, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("lessons: folder %s does not exist: %w", dir, err)
	case err != nil:
		return nil, fmt.Errorf("lessons: folder %s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("lessons: %s is a file, not a folder: want the folder that holds the lesson *.yaml files", dir)
	}
	ls, err := Load(os.DirFS(dir))
	switch {
	case errors.Is(err, errNoLessons):
		return nil, fmt.Errorf("%w in %s", err, dir)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	for i := range ls {
		p := filepath.Join(dir, ls[i].File)
		if !strings.ContainsRune(p, filepath.Separator) {
			p = "." + string(filepath.Separator) + p // a path, never taken for a lesson name
		}
		ls[i].Path = p
	}
	return ls, nil
}

// errNoLessons is Load's error for a folder without a *.yaml file.
var errNoLessons = errors.New("lessons: no *.yaml files")

// Load reads every *.yaml file at the root of fsys, ordered by lesson
// number ("04" before "04b" before "10"), then name. A file that does not
// parse is an error naming it: a broken lesson must not silently vanish
// from the list. A root that cannot be read or is not a folder is an
// error too, as is a root with no *.yaml file.
func Load(fsys fs.FS) ([]Lesson, error) {
	st, err := fs.Stat(fsys, ".")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("lessons: the folder does not exist: %w", err)
	case err != nil:
		return nil, fmt.Errorf("lessons: the folder cannot be read: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lessons: not a folder: want the folder that holds the lesson *.yaml files")
	}
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	sort.Strings(names)
	out := make([]Lesson, 0, len(names))
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("lessons: %w", err)
		}
		l, err := Parse(name, b)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, errNoLessons
	}
	sort.SliceStable(out, func(i, j int) bool {
		if c := compareNumbers(out[i].Number, out[j].Number); c != 0 {
			return c < 0
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Parse reads one lesson file; file names it in errors.
func Parse(file string, b []byte) (Lesson, error) {
	e, err := experiment.ParseExperiment(b)
	if err != nil {
		return Lesson{}, fmt.Errorf("lesson %s: %w", file, err)
	}
	l := Lesson{
		Name:       e.Name,
		Title:      e.Title,
		Articles:   append([]string(nil), e.Articles...),
		Line:       FirstSentence(e.Description),
		File:       file,
		Source:     b,
		Experiment: e,
	}
	if num, rest, ok := strings.Cut(e.Title, " · "); ok && num != "" && isDigit(num[0]) {
		l.Number, l.Title = num, rest
	} else {
		l.Number = leadingDigits(e.Name)
	}
	return l, nil
}

// ErrNoLesson is the error of Find when no lesson matches; ErrAmbiguous,
// when more than one does.
var (
	ErrNoLesson  = errors.New("no such lesson")
	ErrAmbiguous = errors.New("more than one lesson matches")
)

// Find returns the lesson whose name, number or file name is key (a
// number alone also matches "3" for "03"; a unique name prefix matches
// too). Exact matches come first: "04" is lesson 04 even though
// "04-node-loss-static" (04b) starts with it too. When nothing matches the
// error wraps ErrNoLesson; when more than one lesson matches (two lessons
// numbered alike, or a prefix of several names) it wraps ErrAmbiguous and
// lists the candidates, so a number never picks one of two lessons by
// their order in the catalogue.
func Find(lessons []Lesson, key string) (Lesson, error) {
	key = strings.TrimSuffix(path.Base(key), ".yaml")
	if key == "" || key == "." || key == "/" {
		return Lesson{}, fmt.Errorf("lesson %q: %w", key, ErrNoLesson)
	}
	exact := func(l Lesson) bool {
		return l.Name == key || l.Number == key || strings.TrimSuffix(l.File, ".yaml") == key
	}
	prefix := func(l Lesson) bool {
		return strings.HasPrefix(l.Name, key) || strings.TrimLeft(l.Number, "0") == key
	}
	for _, match := range []func(Lesson) bool{exact, prefix} {
		var hits []Lesson
		for _, l := range lessons {
			if match(l) {
				hits = append(hits, l)
			}
		}
		switch {
		case len(hits) == 1:
			return hits[0], nil
		case len(hits) > 1:
			names := make([]string, len(hits))
			for i, l := range hits {
				names[i] = l.Name + " (" + l.Number + ")"
			}
			return Lesson{}, fmt.Errorf("lesson %q: %w: %s", key, ErrAmbiguous, strings.Join(names, ", "))
		}
	}
	return Lesson{}, fmt.Errorf("lesson %q: %w", key, ErrNoLesson)
}

// ByName returns the lesson named exactly name.
func ByName(lessons []Lesson, name string) (Lesson, bool) {
	for _, l := range lessons {
		if l.Name == name {
			return l, true
		}
	}
	return Lesson{}, false
}

// MaxOutstanding is the largest generator cap (max_outstanding) of the
// lessons: the most requests the lab holds open at once, each a socket.
func MaxOutstanding(lessons []Lesson) int {
	n := 0
	for _, l := range lessons {
		n = max(n, l.Experiment.MaxOutstanding)
	}
	return n
}

// FirstSentence returns the first sentence of text with its lines joined:
// up to and including the first ". " (or "." at the end), or all of it.
func FirstSentence(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// compareNumbers orders lesson numbers by their digits as an integer, then
// by what follows them: "4" < "04b" < "10".
func compareNumbers(a, b string) int {
	da, db := leadingDigits(a), leadingDigits(b)
	na, _ := strconv.Atoi(da)
	nb, _ := strconv.Atoi(db)
	switch {
	case da == "-" && db != "-":
		return 1 // unnumbered lessons last
	case db == "-" && da != "-":
		return -1
	case na != nb:
		return cmp.Compare(na, nb)
	}
	return strings.Compare(a[len(da):], b[len(db):])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 {
		return "-"
	}
	return s[:i]
}
