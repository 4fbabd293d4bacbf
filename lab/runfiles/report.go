package runfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/internal/wire"
)

// reportRow is one line of the side-by-side table.
type reportRow struct {
	label string
	value func(r *Run) string
}

// optionalRows are left out when no run has a value for them ("-"
// everywhere): the agent rows in a report of runs without agents, the
// Redis rows in one without Redis.
var optionalRows = map[string]bool{
	"agent task success": true, "agent levels (tasks)": true,
	"redis fallbacks": true, "redis failover": true, "global limit (steady / faults)": true,
	"global limit admitted / configured": true,
}

// NotFinite is what a report (report.txt, levee report, report.html)
// prints for a figure that is not a finite number. Samples hold only
// finite numbers (JSON has no other), so such a figure is a sum or a
// product that overflowed float64 — a killed run rebuilt from samples
// that hold a value near 1e308 (a corrupt line, a gauge that ran away).
const NotFinite = "n/a (overflow)"

// num prints v with prec decimals; NotFinite when it is not a finite
// number, and in e-notation (4 digits) from 1e15 on, where the digits
// would fill the table without telling more.
func num(v float64, prec int) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return NotFinite
	case math.Abs(v) >= 1e15:
		return fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// gnum prints v as %g does, or NotFinite.
func gnum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return NotFinite
	}
	return fmt.Sprintf("%g", v)
}

func pct(v float64) string {
	if s := num(v*100, 2); s != NotFinite {
		return s + "%"
	}
	return NotFinite
}

// prioPct is a priority's success rate, or "-" when it was not offered.
func prioPct(r *Run, p string) string {
	ps := r.Summary.ByPriority[p]
	if ps.Offered == 0 {
		return "-"
	}
	return pct(ps.SuccessRate)
}

func count(v uint64) string { return groupDigits(fmt.Sprintf("%d", v)) }

// groupDigits puts thin separators in long integers: 1234567 → 1,234,567.
func groupDigits(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

var reportRows = []reportRow{
	{"experiment", func(r *Run) string {
		if r.Partial {
			return r.Summary.Name + " (killed)"
		}
		return r.Summary.Name
	}},
	{"duration", func(r *Run) string {
		q := ""
		if r.Summary.Quick {
			q = " quick"
		}
		if e := r.Summary.Ended; e != "" && e != "done" {
			q += " (" + e + ")"
		}
		return num(r.Summary.DurationS, 1) + "s" + q
	}},
	{"offered", func(r *Run) string { return count(r.Summary.Offered) }},
	{"target / achieved req/s", func(r *Run) string {
		return num(r.Summary.TargetRPS, 0) + " / " + num(r.Summary.AchievedRPS, 0)
	}},
	{"P0 success", func(r *Run) string { return prioPct(r, wire.PriorityP0) }},
	{"P1 success", func(r *Run) string { return prioPct(r, wire.PriorityP1) }},
	{"P2 success", func(r *Run) string { return prioPct(r, wire.PriorityP2) }},
	{"P0 p99", func(r *Run) string {
		if r.Summary.ByPriority[wire.PriorityP0].Offered == 0 {
			return "-"
		}
		return partialMs(r, r.Summary.ByPriority[wire.PriorityP0].P99Ms)
	}},
	{"admitted p99", func(r *Run) string { return partialMs(r, r.Summary.AdmittedP99Ms) }},
	{"goodput req/s", func(r *Run) string { return num(r.Summary.GoodputRPS, 1) }},
	{"capacity req/s", func(r *Run) string {
		s := num(r.Summary.CapacityRPS, 1)
		if m := r.Summary.CapacityMeasuredRPS; m > 0 {
			s += " (measured " + num(m, 1) + ")"
		}
		return s
	}},
	// goodput_ratio: ok over Σ min(offered, capacity) per second (not
	// over the capacity: below it, the offer is what could be served).
	{"goodput ÷ usable capacity", func(r *Run) string { return num(r.Summary.GoodputRatio, 3) }},
	{"limit settle after kill", func(r *Run) string {
		out := "-"
		for _, f := range r.Summary.Faults {
			if chaos.Default.Effect(f.Fault) != chaos.EffectNodeLoss || f.LiveSlots == 0 {
				continue
			}
			if f.Settled {
				out = num(f.LimitSettleS, 1) + "s (" + gnum(f.LiveSlots) + " slots)"
			} else {
				out = "never (" + gnum(f.LiveSlots) + " slots)"
			}
		}
		return out
	}},
	{"P0 success during faults", func(r *Run) string {
		v, _ := r.Summary.Metric("p0_success_during_faults")
		if math.IsNaN(v) { // no fault, or no P0 request finished in one
			return "-"
		}
		return pct(v)
	}},
	{"agent task success", func(r *Run) string {
		if a := r.Summary.Agent; a != nil {
			return fmt.Sprintf("%s of %s", pct(a.SuccessRate), count(a.Offered))
		}
		return "-"
	}},
	{"agent levels (tasks)", func(r *Run) string {
		a := r.Summary.Agent
		if a == nil {
			return "-"
		}
		var parts []string
		for _, l := range wire.Levels() {
			if n := a.ByLevel[l]; n > 0 {
				parts = append(parts, l+" "+count(n))
			}
		}
		if len(parts) == 0 {
			return "-"
		}
		return strings.Join(parts, ", ")
	}},
	{"recovery after faults", func(r *Run) string {
		rc := r.Summary.Recovery
		switch {
		case rc == nil:
			return "-"
		case rc.Recovered:
			return num(rc.RecoveryS, 0) + "s (goodput ratio " + num(rc.GoodputRatio, 2) + ")"
		}
		return "never in " + num(rc.RecoveryS, 0) + "s (goodput ratio " + num(rc.GoodputRatio, 2) + ")"
	}},
	{"client retries (denied)", func(r *Run) string {
		s := r.Summary
		if s.ClientRetries == 0 && s.ClientRetriesDenied == 0 {
			return "-"
		}
		return fmt.Sprintf("%s (%s)", count(s.ClientRetries), count(s.ClientRetriesDenied))
	}},
	{"attempts / admitted", func(r *Run) string {
		if r.Summary.UpstreamAttempts == 0 {
			return "-"
		}
		return num(r.Summary.AttemptsPerAdmitted, 3)
	}},
	{"redis", func(r *Run) string {
		rs := r.Summary.Redis
		switch rs.Kind {
		case "", "off":
			return "off"
		case "cluster":
			return "cluster " + rs.Addr + "…"
		}
		return rs.Kind + " " + rs.Addr
	}},
	{"redis fallbacks", func(r *Run) string {
		if k := r.Summary.Redis.Kind; k == "" || k == "off" {
			return "-"
		}
		if f := r.Summary.Redis.Fallbacks; !(f >= 0 && f < 1e15) {
			return num(f, 0) // no uint64 holds it
		}
		return count(uint64(r.Summary.Redis.Fallbacks))
	}},
	{"redis failover", func(r *Run) string {
		var out []string
		for _, f := range r.Summary.Redis.Failovers {
			if f.By == "" {
				out = append(out, "none")
				continue
			}
			out = append(out, num(f.AfterS, 1)+"s")
		}
		if len(out) == 0 {
			return "-"
		}
		return strings.Join(out, ", ")
	}},
	{"global limit admitted / configured", func(r *Run) string {
		rl := r.Summary.RateLimit
		if rl == nil {
			return "-"
		}
		// The priority furthest from its limit outside faults (the one
		// global_limit_error reports).
		var best *GlobalLimitCheck
		name := ""
		for _, p := range []string{"P0", "P1", "P2"} {
			if c, ok := rl.ByPriority[p]; ok && c.Steady.Seconds > 0 && (best == nil || math.Abs(c.Steady.Error) > math.Abs(best.Steady.Error)) {
				best, name = &c, p
			}
		}
		if best == nil {
			return "-"
		}
		limit := NotFinite
		if l := best.LimitRPS; !math.IsNaN(l) && !math.IsInf(l, 0) {
			limit = fmt.Sprintf("%.4g", l)
		}
		if best.Steady.ReferenceRPS > 0 {
			return fmt.Sprintf("%s %s / %s /s (one exact limiter: %s)", name, num(best.Steady.AdmittedRPS, 1), limit, num(best.Steady.ReferenceRPS, 1))
		}
		return fmt.Sprintf("%s %s / %s /s", name, num(best.Steady.AdmittedRPS, 1), limit)
	}},
	{"global limit (steady / faults)", func(r *Run) string {
		rl := r.Summary.RateLimit
		if rl == nil {
			return "-"
		}
		worst := func(faults bool) string {
			v, note := r.Summary.Metric(map[bool]string{false: "global_limit_error", true: "global_limit_error_during_faults"}[faults])
			if note != "" {
				return "-"
			}
			// The sign of the worst priority, for people: over or under.
			for _, c := range rl.ByPriority {
				sp := c.Steady
				if faults {
					sp = c.Faults
				}
				if sp.Seconds > 0 && math.Abs(sp.Error) == v {
					if e := sp.Error * 100; math.Abs(e) < 1e15 { // and not NaN
						return fmt.Sprintf("%+.1f%%", e)
					}
					return pct(sp.Error)
				}
			}
			if s := num(v*100, 1); s != NotFinite {
				return "±" + s + "%"
			}
			return NotFinite
		}
		return worst(false) + " / " + worst(true)
	}},
	{"gateway lag p99", func(r *Run) string { return ms(r.Summary.Gateway.LagP99Ms) }},
	{"gateway sched p99", func(r *Run) string { return ms(r.Summary.Gateway.SchedLatencyP99Ms) }},
	{"gateway max heap", func(r *Run) string { return mb(r.Summary.Gateway.MaxHeapBytes) }},
	{"gateway max RSS", func(r *Run) string { return mb(r.Summary.Gateway.MaxRSSBytes) }},
	{"OOM kills", func(r *Run) string { return fmt.Sprintf("%d", r.Summary.Gateway.OOMKills) }},
	{"shed ratelimit", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeShedRateLimit.String()]) }},
	{"shed overload", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeShedOverload.String()]) }},
	{"shed queue_full", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeShedQueueFull.String()]) }},
	{"shed queue_timeout", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeShedQueueTimeout.String()]) }},
	{"shed budget", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeShedBudget.String()]) }},
	{"fallback", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeFallback.String()]) }},
	{"timeout", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeTimeout.String()]) }},
	{"error", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeError.String()]) }},
	{"generator dropped", func(r *Run) string { return count(r.Summary.Outcomes[wire.OutcomeGeneratorDropped.String()]) }},
	{"unaccounted", func(r *Run) string { return groupDigits(fmt.Sprintf("%d", r.Summary.Unaccounted)) }},
	{"shed check (gw/client)", func(r *Run) string {
		if r.Partial {
			return "-"
		}
		c := r.Summary.ShedCheck
		s := fmt.Sprintf("%s / %s", count(c.Gateway), count(c.Client))
		if c.InDoubt > 0 { // the client's timeouts: the gateway may have shed them
			s += fmt.Sprintf(" (%s in doubt)", count(c.InDoubt))
		}
		if !c.Exact {
			s += " ~"
		}
		return s
	}},
	{"thresholds", func(r *Run) string {
		if r.Partial {
			return "-"
		}
		n, fail := len(r.Summary.Thresholds), len(r.Summary.FailedThresholds())
		var s string
		switch {
		case n == 0:
			s = "none"
		case fail == 0:
			s = fmt.Sprintf("pass (%d)", n)
		default:
			s = fmt.Sprintf("FAIL %d of %d", fail, n)
		}
		// A run whose fault steps failed did not pass, whatever its
		// thresholds say (summary.json's pass is false): the row says so.
		if k := len(r.Summary.FaultStepErrors); k > 0 {
			s += fmt.Sprintf(", FAIL %d fault step", k)
			if k > 1 {
				s += "s"
			}
		}
		return s
	}},
}

func ms(v float64) string {
	switch s := num(v, 0); {
	case s == NotFinite:
		return s
	case math.Abs(v) >= 1e15:
		return s + " ms"
	}
	if v >= 10000 {
		return groupDigits(fmt.Sprintf("%.0f", v)) + " ms"
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

// partialMs is ms, or "-" for a killed run (its latencies were never
// summarized).
func partialMs(r *Run, v float64) string {
	if r.Partial {
		return "-"
	}
	return ms(v)
}

func mb(v float64) string {
	if s := num(v/(1<<20), 1); s != NotFinite {
		return s + " MB"
	}
	return NotFinite
}

// WriteReport prints the runs side by side: one column per run, one row per
// figure, then the failed thresholds of each run.
func WriteReport(w io.Writer, runs []*Run) error {
	if len(runs) == 0 {
		return errors.New("report: no runs")
	}
	cells := make([][]string, 0, len(reportRows))
	width := make([]int, len(runs)+1)
	for _, row := range reportRows {
		line := make([]string, len(runs)+1)
		line[0] = row.label
		empty := true
		for j, r := range runs {
			line[j+1] = row.value(r)
			empty = empty && line[j+1] == "-"
		}
		if optionalRows[row.label] && empty {
			continue
		}
		for j, c := range line {
			width[j] = max(width[j], utf8.RuneCountInString(c))
		}
		cells = append(cells, line)
	}
	var b strings.Builder
	for i, row := range cells {
		for j, c := range row {
			if j > 0 {
				b.WriteString("  ")
			}
			pad := width[j] - utf8.RuneCountInString(c)
			if j == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
		}
		b.WriteString("\n")
		if i == 0 {
			total := 0
			for _, wd := range width {
				total += wd
			}
			b.WriteString(strings.Repeat("─", total+2*(len(width)-1)) + "\n")
		}
	}
	for _, r := range runs {
		if len(r.Predictions) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: predictions\n", r.Summary.Name)
		for _, p := range r.Predictions {
			fmt.Fprintf(&b, "  %s\n", p.PredictionLine())
		}
	}
	for _, r := range runs {
		writeFailures(&b, r.Summary.Name, "failed thresholds", r.Summary.FailedThresholds())
		writeFailures(&b, r.Summary.Name, "fault steps that failed", r.Summary.FaultStepErrors)
		if w := r.Summary.WriteErrors; w != nil {
			writeFailures(&b, r.Summary.Name, "recording incomplete", []string{w.String()})
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFailures writes a block of what failed in the run called name
// (nothing when fails is empty): its failed thresholds, the fault steps
// of its experiment that did not apply or revert, each naming the step,
// or the lines its recorder failed to write.
func writeFailures(b *strings.Builder, name, what string, fails []string) {
	if len(fails) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s: %s\n", name, what)
	for _, f := range fails {
		fmt.Fprintf(b, "  ✗ %s\n", f)
	}
}

// WriteTextReport writes dir's report.txt (the table `levee report dir`
// prints), through a temporary file and a rename like summary.json. It is
// the ReportWriter every Recorder runs.
func WriteTextReport(dir string) error {
	run, err := ReadRun(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", ReportFile, err)
	}
	var b bytes.Buffer
	if err := WriteReport(&b, []*Run{run}); err != nil {
		return fmt.Errorf("%s: %w", ReportFile, err)
	}
	if err := writeFileAtomic(filepath.Join(dir, ReportFile), b.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", ReportFile, err)
	}
	return nil
}
