package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab"
)

// packAll puts items on up to n lines of width w after a label, marking
// what does not fit with "…", and reports whether every item fit.
func packAll(label string, items []string, w, n int) (_ []string, all bool) {
	lines := make([]string, n)
	indent := strings.Repeat(" ", ansi.StringWidth(label))
	li := 0
	cur := label
	for _, it := range items {
		cand := cur + "  " + it
		if cur == label || cur == indent {
			cand = cur + it
		}
		if ansi.StringWidth(cand) <= w {
			cur = cand
			continue
		}
		if cur == label || cur == indent { // one item longer than the line
			cur = cand
			continue
		}
		lines[li] = cur
		li++
		if li == n {
			lines[n-1] = fit(lines[n-1]+"  …", w)
			return fixAll(lines, w), false
		}
		cur = indent + it
	}
	lines[li] = cur
	return fixAll(lines, w), ansi.StringWidth(cur) <= w
}

func fixAll(lines []string, w int) []string {
	for i := range lines {
		lines[i] = fit(lines[i], w)
	}
	return lines
}

// faultRows lists the faults in catalogue order; when they do not all fit
// (80×24 shows four), the active and failed ones come first, so a fault
// toggled on a key past the fold still shows as active; when those do not
// all fit either, the row ends with how many it leaves out ("… +3 active").
func (m *Model) faultRows() []string {
	var items, first, rest []string
	var firstFaults []lab.FaultStatus
	for _, f := range m.faults {
		it := "[" + clean(f.Key) + "] " + clean(f.Name)
		switch {
		case f.Unavailable != "":
			// Not in this lab: dimmed and marked, the reason on the key.
			it = stDim.Render(it + " n/a")
		case f.Active:
			it = stActive.Render(it + " ●")
			if f.Detail != "" {
				it += " " + clean(f.Detail)
			}
		}
		if f.Error != "" {
			it += stErr.Render(" ⚠ failed")
		}
		items = append(items, it)
		if f.Active || f.Error != "" {
			first = append(first, it)
			firstFaults = append(firstFaults, f)
		} else {
			rest = append(rest, it)
		}
	}
	if len(items) == 0 {
		items = []string{stDim.Render("none")}
	}
	label := stBold.Render(" faults  ")
	lines, all := packAll(label, items, m.width, m.lay.faultLines)
	if all || len(first) == 0 {
		return lines
	}
	// More active faults than fit (five toggled at 100×30 showed two and
	// "…"): the row says how many of them it leaves out.
	return packCounted(label, append(first, rest...), m.width, m.lay.faultLines, func(shown int) string {
		tail := "…"
		var active, failed int
		for _, f := range firstFaults[min(shown, len(firstFaults)):] {
			if f.Active {
				active++
			} else {
				failed++
			}
		}
		if active > 0 {
			tail += fmt.Sprintf(" +%d active", active)
		}
		if failed > 0 {
			tail += fmt.Sprintf(" +%d failed", failed)
		}
		return tail
	})
}

// nodeRows lists the nodes in index order. When they do not all fit (12
// nodes at 80×24 show five), the nodes that need attention — down,
// ejected or probing — come first, and the row ends with how many are
// not shown: a dead node past the fold looked like a healthy lab.
func (m *Model) nodeRows() []string {
	var items, first, rest []string
	for _, n := range m.last.Nodes {
		var it string
		if n.Up {
			it = fmt.Sprintf("#%d %s %.0f/%.0f q %.0f", n.Index+1, nodeMark(n.Ejection), n.Busy, n.Slots, n.Queued)
		} else {
			it = fmt.Sprintf("#%d %s", n.Index+1, stDown.Render("✕ down"))
			if n.RestartIn > 0 {
				it += fmt.Sprintf(" (restart %.0f s)", math.Ceil(n.RestartIn))
			}
		}
		items = append(items, it)
		if !n.Up || n.Ejection == wire.EjectionEjected || n.Ejection == wire.EjectionProbing {
			first = append(first, it)
		} else {
			rest = append(rest, it)
		}
	}
	if len(items) == 0 {
		items = []string{stDim.Render("—")}
	}
	label := stBold.Render(" nodes   ")
	lines, all := packAll(label, items, m.width, m.lay.nodeLines)
	if all {
		return lines
	}
	return packCounted(label, append(first, rest...), m.width, m.lay.nodeLines, func(shown int) string {
		if hidden := len(items) - shown; hidden > 1 {
			return fmt.Sprintf("… %d more nodes", hidden)
		}
		return "… 1 more node"
	})
}

// packCounted is packAll for a list cut with a count: when not every item
// fits in n lines, as many as fit are shown (shown of them, the first
// ones) and the last line ends with tail(shown), never cut itself.
func packCounted(label string, items []string, w, n int, tail func(shown int) string) []string {
	lines, all := packAll(label, items, w, n)
	if all {
		return lines
	}
	for k := len(items) - 1; k >= 0; k-- {
		if ls, ok := packAll(label, append(items[:k:k], stDim.Render(tail(k))), w, n); ok {
			return ls
		}
	}
	return lines
}

// nodeMark is a live node's mark: in rotation, or taken out of it by the
// gateways' outlier ejection (ejected, or probing its way back).
func nodeMark(ejection string) string {
	switch ejection {
	case wire.EjectionEjected:
		return stEjected.Render("⊘ ejected")
	case wire.EjectionProbing:
		return stProbing.Render("◐ probing")
	}
	return stUp.Render("●")
}

func (m *Model) lessonRows() []string {
	label := stBold.Render(" lesson  ")
	n := m.lay.lessonLines
	ls := m.lesson
	text := clean(ls.Text)
	if text == "" {
		text = clean(m.last.Lesson)
	}
	if ls.Title == "" && text == "" {
		return fixAll(append([]string{label + stDim.Render("none: `levee lab EXPERIMENT.yaml` plays a lesson")}, make([]string, n-1)...), m.width)
	}
	title := clean(ls.Title)
	if n == 1 {
		// One line (below 120×36): a numbered lesson's title
		// ("03 · Priority load shedding: …") shows as its number, so the
		// step's text — what to watch — fits; the picker (l) has the title.
		if num, _, ok := strings.Cut(title, " · "); ok && num != "" && num[0] >= '0' && num[0] <= '9' {
			title = num
		}
	}
	var step string
	if ls.Steps > 0 {
		step = fmt.Sprintf(" · step %d/%d", ls.Step, ls.Steps)
	}
	kind := strings.ToUpper(clean(ls.Kind))
	if kind != "" {
		step += " · " + stStale.Render(kind)
	}
	head := cutTitle(title, step, m.width-ansi.StringWidth(label), n)
	if len(ls.Results) > 0 {
		if n == 1 { // one line: the measured values first, the rest as fits
			return []string{fit(label+stStale.Render(kind)+" "+resultsText(ls.Results)+" — "+text, m.width)}
		}
		text = "Measured: " + resultsText(ls.Results) + ". " + text
	}
	if n == 1 {
		return []string{fit(label+head+" — "+text, m.width)}
	}
	lines := []string{label + head}
	iw := m.width - ansi.StringWidth(label)
	// One cell of slack: Wordwrap may keep a breaking hyphen past the limit.
	for _, l := range strings.Split(ansi.Wordwrap(text, iw-1, ""), "\n") {
		lines = append(lines, strings.Repeat(" ", ansi.StringWidth(label))+l)
	}
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = ansi.Truncate(lines[n-1], m.width-1, "") + "…"
	}
	for len(lines) < n {
		lines = append(lines, "")
	}
	return fixAll(lines, m.width)
}

// cutTitle is the lesson row's head: the title, then step (its step and
// kind), in w cells. The title is what gets cut, never the step and kind:
// an experiment's own long title (not a numbered lesson's) hid them. On one
// line (n == 1) the title takes at most a third of the row, so the step's
// text still shows after it.
func cutTitle(title, step string, w, n int) string {
	tw := w - ansi.StringWidth(step)
	if n == 1 {
		tw = w / 3
	}
	if ansi.StringWidth(title) > tw {
		title = ansi.Truncate(title, max(tw, 1), "…")
	}
	return title + step
}

func (m *Model) statusLine() string {
	left := ""
	switch {
	case m.status != "" && m.statusErr:
		left = stErr.Render(" ✕ " + m.status)
	case m.status != "":
		left = stInfo.Render(" " + m.status)
	case m.nSamples == 0:
		left = stDim.Render(" waiting for the first sample…")
	case m.recording && m.recDir != "":
		left = stDim.Render(" recording to " + clean(m.recDir))
	}
	right := ""
	if m.lay.pages > 1 {
		right = stDim.Render(fmt.Sprintf("page %d/%d · tab ", m.page+1, m.lay.pages))
	}
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 2 {
		return fit(left, m.width-ansi.StringWidth(right)-2) + "  " + right
	}
	return left + strings.Repeat(" ", gap) + right
}
