package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/levee-lab/levee/lab/runfiles"
)

var (
	//go:embed assets/page.html
	pageHTML string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.js
	reportJS string
)

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"deref":   func(b *bool) bool { return b != nil && *b },
	"seconds": fmtSeconds,
	"legend":  legend,
	// svg is replaced per page (it needs the page).
	"svg": func(int) template.HTML { return "" },
}).Parse(pageHTML))

// pageData is what the template reads.
type pageData struct {
	Page *page
	CSS  template.CSS
	JS   template.JS
	JSON template.JS
}

// Write renders the runs as one self-contained HTML page on w: the first
// run is the baseline (A) the others are compared with. It returns an error
// for no runs or more runs than overlay readably (4).
func Write(w io.Writer, runs ...*Run) error {
	pg, err := build(runs)
	if err != nil {
		return err
	}
	return render(w, pg)
}

// WriteFile reads the run folders and writes their report to path, through
// a temporary file and a rename, so a reader never sees half a page.
func WriteFile(path string, dirs ...string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("html report: no run folders")
	}
	runs := make([]*Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	var b bytes.Buffer
	if err := Write(&b, runs...); err != nil {
		return err
	}
	return writeAtomic(path, b.Bytes())
}

func render(w io.Writer, pg *page) error {
	js, err := json.Marshal(pg) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	t, err := pageTmpl.Clone()
	if err != nil {
		return err
	}
	t.Funcs(template.FuncMap{"svg": func(i int) template.HTML {
		var sb strings.Builder
		renderSVG(&sb, pg, i, false)
		if pg.Charts[i].Tall {
			renderSVG(&sb, pg, i, true)
		}
		return template.HTML(sb.String()) // built from escaped parts
	}})
	return t.Execute(w, pageData{Page: pg, CSS: template.CSS(reportCSS), JS: template.JS(reportJS), JSON: template.JS(js)})
}

// legend is a chart's series by name, once each (runs differ by dash, shown
// in the page header).
func legend(c chart) []series {
	seen := map[string]bool{}
	var out []series
	for _, s := range c.Series {
		if !seen[s.Key] {
			seen[s.Key] = true
			out = append(out, s)
		}
	}
	return out
}

// fmtSeconds prints a time of the run: "250 ms", "12.5 s", "2:05".
func fmtSeconds(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 120:
		return trimZero(fmt.Sprintf("%.1f", s)) + " s"
	}
	t := int(math.Round(s))
	return fmt.Sprintf("%d:%02d", t/60, t%60)
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("html report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// ReportFile is the page a recording leaves beside its other files.
const ReportFile = runfiles.HTMLReportFile

// WriteRunReport writes dir/report.html from the run folder dir. It is a
// runfiles.ReportWriter: recorders run it when a recording ends.
func WriteRunReport(dir string) error {
	return WriteFile(filepath.Join(dir, ReportFile), dir)
}
