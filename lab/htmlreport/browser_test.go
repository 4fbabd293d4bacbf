package htmlreport

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	//go:embed testdata/catch.js
	catchJS string
	//go:embed testdata/check.js
	checkJS string
)

// chromiumPath finds headless Chromium. Without it the browser tests skip,
// except in CI (CI set), where they fail: scripts/test.sh installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; scripts/test.sh installs it with apt-get install chromium")
	}
	t.Skip("chromium is not installed (scripts/test.sh installs it)")
	return ""
}

// verdict is what testdata/check.js writes into the page.
type verdict struct {
	Errors []string `json:"errors"`
	SVGs   int      `json:"svgs"`
	Charts []struct {
		ID    string `json:"id"`
		Drawn []struct {
			Key     string  `json:"key"`
			Run     int     `json:"run"`
			Length  float64 `json:"length"`
			Width   float64 `json:"width"`
			Height  float64 `json:"height"`
			Visible bool    `json:"visible"`
		} `json:"drawn"`
		Bands int `json:"bands"`
		Lines int `json:"lines"`
		Marks int `json:"marks"`
		OOM   int `json:"oom"`
		// Overlaps are the band labels drawn over a line label ("band
		// label / line label").
		Overlaps []string `json:"overlaps"`
		// Cut are the band labels that run past the plot's edge.
		Cut []string `json:"cut"`
	} `json:"charts"`
	Hover struct {
		Shown      bool   `json:"shown"`
		Text       string `json:"text"`
		Crosshairs int    `json:"crosshairs"`
	} `json:"hover"`
	Overflow float64 `json:"overflow"`
	// Clipped are the headline tile values that run past their tile
	// ("GOODPUT: 134.4 /s").
	Clipped []string `json:"clipped"`
	// Scrolled are the panels (by title) whose table is wider than the
	// panel: read only by scrolling it sideways.
	Scrolled []string `json:"scrolled"`
	// Widened are the panels (by title) beside another that their note
	// made wider than their table needs.
	Widened []string `json:"widened"`
	// TileRows is how many rows the headline tiles take.
	TileRows int `json:"tile_rows"`
	// AxisPx is the smallest axis label's font size on screen (CSS px).
	AxisPx float64 `json:"axis_px"`
	// Width is the page's viewport width (CSS px).
	Width float64 `json:"width"`
}

var verdictRE = regexp.MustCompile(`(?s)<pre id="levee-verdict">(.*?)</pre>`)

// openInChromium loads page (with the checker injected) in headless
// Chromium at the given window size and returns the checker's verdict and
// what Chromium logged.
func openInChromium(t *testing.T, page []byte, width, height int) (verdict, string) {
	t.Helper()
	bin := chromiumPath(t)
	dir := t.TempDir()
	s := string(page)
	s = strings.Replace(s, "<head>", "<head><script>"+catchJS+"</script>", 1)
	s = strings.Replace(s, "</body>", "<script>"+checkJS+"</script></body>", 1)
	if width < minWindow {
		s = inFrame(s, width, height)
	}
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
		"--window-size="+itoa(width)+","+itoa(height), "--virtual-time-budget=5000",
		"--dump-dom", "file://"+file)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(errb.String(), 2000))
	}
	m := verdictRE.FindSubmatch(out.Bytes())
	if m == nil {
		t.Fatalf("no verdict in the page Chromium dumped (did the page's scripts run?)\nstderr: %s", tail(errb.String(), 2000))
	}
	var v verdict
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &v); err != nil {
		t.Fatalf("verdict: %v\n%s", err, m[1])
	}
	if v.Width != float64(width) {
		t.Fatalf("the page was laid out %.0f px wide, not %d", v.Width, width)
	}
	return v, errb.String()
}

// minWindow is the narrowest window headless Chromium opens: asked for
// less, it lays the page out 500 px wide (and a screenshot crops that).
const minWindow = 500

// inFrame puts page in an iframe width px wide (srcdoc, so of the same
// origin) and copies the checker's verdict out of it into the outer page,
// which is what --dump-dom prints.
func inFrame(page string, width, height int) string {
	return `<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">` +
		`<iframe id="report" style="border:0;width:` + itoa(width) + `px;height:` + itoa(height) + `px" srcdoc="` + html.EscapeString(page) + `"></iframe>` +
		`<script>var poll = setInterval(function () {
  var d = document.getElementById("report").contentDocument, p = d && d.getElementById("levee-verdict");
  if (!p) return;
  clearInterval(poll);
  var q = document.createElement("pre");
  q.id = "levee-verdict";
  q.textContent = p.textContent;
  document.body.appendChild(q);
}, 20);</script></body></html>`
}

func itoa(n int) string { return strconv.Itoa(n) }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// consoleErrors are the lines Chromium logged for uncaught exceptions and
// console.error calls.
func consoleErrors(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, ":CONSOLE") && (strings.Contains(l, "Uncaught") || strings.Contains(l, "Error")) {
			out = append(out, l)
		}
	}
	return out
}

// checkDrawn asserts what every page must show: a drawn line for every
// series with data, the fault bands, the threshold lines, working hover and
// no script error.
func checkDrawn(t *testing.T, pg *page, v verdict, log string) {
	t.Helper()
	if len(v.Errors) > 0 {
		t.Errorf("script errors: %q", v.Errors)
	}
	if ce := consoleErrors(log); len(ce) > 0 {
		t.Errorf("Chromium logged errors:\n%s", strings.Join(ce, "\n"))
	}
	if v.SVGs != len(pg.Charts) || len(v.Charts) != len(pg.Charts) {
		t.Fatalf("the browser found %d charts, the page has %d", v.SVGs, len(pg.Charts))
	}
	bands := len(drawnBands(pg))
	for i, c := range pg.Charts {
		got := v.Charts[i]
		if got.ID != c.ID {
			t.Fatalf("chart %d is %q in the browser, %q in the page", i, got.ID, c.ID)
		}
		if len(got.Drawn) != len(c.Series) {
			t.Errorf("%s: %d series drawn, %d in the data", c.ID, len(got.Drawn), len(c.Series))
			continue
		}
		drew := 0
		for j, s := range c.Series {
			d := got.Drawn[j]
			if s.Values.points() < 2 {
				continue
			}
			if d.Length <= 0 || d.Width <= 0 || !d.Visible {
				t.Errorf("%s: series %s of run %d has %d points but the browser drew length %.1f, width %.1f, visible %v",
					c.ID, s.Key, s.Run, s.Values.points(), d.Length, d.Width, d.Visible)
				continue
			}
			drew++
		}
		if drew == 0 {
			t.Errorf("%s: the browser drew no data", c.ID)
		}
		if len(got.Cut) > 0 {
			t.Errorf("%s: band labels cut at the plot's edge: %q", c.ID, got.Cut)
		}
		if len(got.Overlaps) > 0 {
			t.Errorf("%s: labels drawn over each other: %q", c.ID, got.Overlaps)
		}
		if got.Bands != bands {
			t.Errorf("%s: %d fault bands drawn, want %d", c.ID, got.Bands, bands)
		}
		lines := 0
		for _, l := range c.Lines {
			if !l.OffScale {
				lines++
			}
		}
		if got.Lines != lines {
			t.Errorf("%s: %d threshold/limit lines drawn, want %d", c.ID, got.Lines, lines)
		}
		marks := 0
		for _, r := range pg.Runs {
			marks += len(r.Narration)
		}
		if got.Marks != marks {
			t.Errorf("%s: %d narration marks, want %d", c.ID, got.Marks, marks)
		}
	}
	if len(v.Clipped) > 0 {
		t.Errorf("tile values cut off at the tile's edge: %q", v.Clipped)
	}
	if !v.Hover.Shown || !strings.Contains(v.Hover.Text, "t =") {
		t.Errorf("hovering the first chart showed no values: %+v", v.Hover)
	}
	if v.Hover.Crosshairs != len(pg.Charts) {
		t.Errorf("hover: %d charts show the crosshair, want all %d", v.Hover.Crosshairs, len(pg.Charts))
	}
}

func TestBrowserAB(t *testing.T) {
	dir := t.TempDir()
	a := synth{name: "collapse", samples: 240, seed: 1}.write(t, dir)
	b := synth{name: "protected", samples: 240, seed: 2, protected: true}.write(t, dir)
	runs := loadAll(t, a, b)
	v := drawRuns(t, runs, 1280, 900)
	// Two runs on a laptop screen: every table whole, differences included.
	if len(v.Scrolled) > 0 {
		t.Errorf("at 1280 px these tables must be scrolled sideways to be read: %q", v.Scrolled)
	}
	// And so when run A had four gateways: the key figures' note on whose
	// figures they are wraps under the table instead of widening its panel
	// (which squeezed the thresholds into a sideways scroll).
	four := synth{name: "four-gateways-collapse", samples: 240, seed: 1, gateways: 4}.write(t, dir)
	if v := drawRuns(t, loadAll(t, four, b), 1280, 900); len(v.Scrolled) > 0 || len(v.Widened) > 0 {
		t.Errorf("4 gateways beside 1, at 1280 px: these tables must be scrolled sideways to be read: %q; these panels are wider than their table: %q", v.Scrolled, v.Widened)
	}

	// What the synthetic runs hold, counted independently of the page
	// model: the same two faults in each run (drawn once) plus run A's OOM
	// outage, four narration steps each, and these lines.
	want := map[string]struct{ bands, lines, marks int }{
		"success": {3, 2, 8}, // P0 ≥ 99.9 %: A fails, B passes
		"memory":  {3, 3, 8}, // heap ≤ 100 MB for A (fails) and B, and one shared 256 MB pod limit
		"latency": {3, 0, 8},
	}
	for _, c := range v.Charts {
		if w, ok := want[c.ID]; ok && (c.Bands != w.bands || c.Lines != w.lines || c.Marks != w.marks) {
			t.Errorf("%s: bands %d, lines %d, marks %d; want %d, %d, %d", c.ID, c.Bands, c.Lines, c.Marks, w.bands, w.lines, w.marks)
		}
		if c.ID == "memory" && c.OOM != 1 {
			t.Errorf("memory: %d OOM kill marks, want 1", c.OOM)
		}
	}
}

// TestBrowserThreeRuns opens three and four runs side by side on a
// laptop screen: each headline tile shows every run's value, and both
// tables are whole. Beside three or four runs' key figures (and their
// differences), the thresholds were squeezed into a 22em column that had
// to be scrolled sideways to read any run past the first.
func TestBrowserThreeRuns(t *testing.T) {
	dir := t.TempDir()
	runs := loadAll(t,
		synth{name: "collapse", samples: 160, seed: 4}.write(t, dir),
		synth{name: "protected", samples: 160, seed: 5, protected: true}.write(t, dir),
		synth{name: "protected-again", samples: 160, seed: 6, protected: true}.write(t, dir),
		synth{name: "collapse-again", samples: 200, seed: 7}.write(t, dir))
	for _, n := range []int{3, 4} {
		if v := drawRuns(t, runs[:n], 1280, 900); len(v.Scrolled) > 0 {
			t.Errorf("%d runs at 1280 px: these tables must be scrolled sideways to be read: %q", n, v.Scrolled)
		}
	}
}

// TestBrowserNarrow opens a single run at a phone's width: nothing may
// stick out sideways (tables scroll inside their panels), the axis
// labels stay at least 9 px, and the headline tiles sit two a row.
func TestBrowserNarrow(t *testing.T) {
	dir := t.TempDir()
	runs := loadAll(t, synth{name: "protected", samples: 120, seed: 3, protected: true}.write(t, dir))
	v := drawRuns(t, runs, 375, 800)
	if v.Overflow > 0 {
		t.Errorf("at 375 px the page is %.0f px wider than the screen", v.Overflow)
	}
	// The charts shrink to the screen, their text with them: the axes
	// must stay legible.
	if v.AxisPx < 9 {
		t.Errorf("at 375 px the axis labels are %.1f px", v.AxisPx)
	}
	// The six headline figures, two a row, fill the first screen.
	if v.TileRows > 3 {
		t.Errorf("at 375 px the headline tiles take %d rows, want 3", v.TileRows)
	}
}

// TestBrowserReference draws the recorded reference runs of lessons 01 and
// 03 (the README's screenshot), real data from the lab.
func TestBrowserReference(t *testing.T) {
	ref := filepath.Join("..", "..", "experiments", "reference")
	a, b := filepath.Join(ref, "01-no-defenses"), filepath.Join(ref, "03-priority-shedding")
	for _, d := range []string{a, b} {
		if _, err := os.Stat(filepath.Join(d, "samples.jsonl")); err != nil {
			t.Skipf("%s has no samples.jsonl", d)
		}
	}
	runs := loadAll(t, a, b)
	v := drawRuns(t, runs, 1280, 1000)
	// The A/B comparison on a laptop screen: the key figures with their
	// differences, and the thresholds, read without scrolling sideways.
	if len(v.Scrolled) > 0 {
		t.Errorf("at 1280 px these tables must be scrolled sideways to be read: %q", v.Scrolled)
	}
}

// TestBrowserPrint lays the A/B page out as it prints: the print styles
// in force (turned on for the screen: headless Chromium cannot be asked
// for print media) at the width of A4 inside its margins (188 mm, 710 px).
// Two charts a row draw each at about half its size; their axis labels
// must stay legible on paper, and nothing may stick out.
func TestBrowserPrint(t *testing.T) {
	dir := t.TempDir()
	runs := loadAll(t,
		synth{name: "collapse", samples: 240, seed: 1}.write(t, dir),
		synth{name: "protected", samples: 240, seed: 2, protected: true}.write(t, dir))
	pg, err := build(runs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, runs...); err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(buf.String(), "@media print {", "@media all {", 1)
	if page == buf.String() {
		t.Fatal("the page has no print styles")
	}
	v, log := openInChromium(t, []byte(page), 710, 1000)
	checkDrawn(t, pg, v, log)
	if v.Overflow > 0 {
		t.Errorf("printed, the page is %.0f px wider than A4", v.Overflow)
	}
	if v.AxisPx < 8 {
		t.Errorf("printed, the axis labels are %.1f px (%.1f pt)", v.AxisPx, v.AxisPx*0.75)
	}
}

// TestBrowserReferenceNarrow draws a recorded reference run on a phone:
// lesson 06's Redis outage band ends under the memory chart's off-scale
// pod limit label, where labels of 12 units need measuring by character
// (a fixed width per character put the two over each other).
func TestBrowserReferenceNarrow(t *testing.T) {
	d := filepath.Join("..", "..", "experiments", "reference", "06-redis-outage")
	if _, err := os.Stat(filepath.Join(d, "samples.jsonl")); err != nil {
		t.Skipf("%s has no samples.jsonl", d)
	}
	runs := loadAll(t, d)
	v := drawRuns(t, runs, 390, 900)
	if v.Overflow > 0 {
		t.Errorf("at 390 px the page is %.0f px wider than the screen", v.Overflow)
	}
}

// drawRuns writes runs' page, opens it in Chromium at width × height and
// checks it was drawn whole (checkDrawn); it returns what the page
// measured.
func drawRuns(t *testing.T, runs []*Run, width, height int) verdict {
	t.Helper()
	pg, err := build(runs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, runs...); err != nil {
		t.Fatal(err)
	}
	v, log := openInChromium(t, buf.Bytes(), width, height)
	checkDrawn(t, pg, v, log)
	return v
}

func loadAll(t *testing.T, dirs ...string) []*Run {
	t.Helper()
	var runs []*Run
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}
