package plan

import (
	"math"
	"strconv"
	"strings"
	"time"
)

func firstSet(s ...Source) Source {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// rps is a rate in requests a second: "214.7 req/s", "2,100 req/s".
func rps(v float64) string {
	if math.Abs(v) >= 1000 || v == math.Trunc(v) {
		return num(v, 0) + " req/s"
	}
	return num(v, 1) + " req/s"
}

// pct is a share as a percentage: "94 %".
func pct(v float64) string {
	if v < 0.1 {
		return num(v*100, 1) + " %"
	}
	return num(v*100, 0) + " %"
}

// dur is a duration for people: "224 ms", "1.4 s".
func dur(d time.Duration) string {
	if d == math.MinInt64 { // has no positive counterpart
		return "−" + dur(math.MaxInt64)
	}
	if d < 0 {
		return "−" + dur(-d)
	}
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "0 s"
	case ms < 10:
		return trim(strconv.FormatFloat(ms, 'f', 1, 64)) + " ms"
	case d < time.Second:
		return num(ms, 0) + " ms"
	}
	return trim(strconv.FormatFloat(d.Seconds(), 'f', 3, 64)) + " s"
}

// secs is a duration in seconds for a formula, to 3 significant digits
// under a second: "0.224 s", "0.0224 s", "1.2 s".
func secs(d time.Duration) string {
	v, decimals := d.Seconds(), 3
	if v > 0 && v < 1 {
		decimals = 2 - int(math.Floor(math.Log10(v)))
	}
	return trim(strconv.FormatFloat(v, 'f', decimals, 64)) + " s"
}

// num formats v with the given decimals and thousands separators; trailing
// zero decimals are kept (they say how precise the figure is).
func num(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var out strings.Builder
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			out.WriteByte(',')
		}
		out.WriteRune(ch)
	}
	r := out.String()
	if frac != "" {
		r += "." + frac
	}
	if neg {
		r = "-" + r
	}
	return r
}

// trim drops trailing zero decimals: "1.400" → "1.4", "2.000" → "2".
func trim(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
