package scrape

import (
	"fmt"
	"strings"
	"testing"
)

// DropNonFinite: a gauge or untyped NaN/±Inf is removed (its family too
// when nothing is left), a counter or histogram keeps its previous value
// when there is one and is removed when there is none, a summary's NaN
// quantiles (no observations) are left alone, and finite series are kept.
func TestDropNonFinite(t *testing.T) {
	parse := func(s string) Families {
		t.Helper()
		f, err := Parse(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	prev := parse("# TYPE c counter\nc{k=\"a\"} 5\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_sum 1.5\nh_count 3\n")
	cur := parse(`# TYPE g gauge
g{k="a"} NaN
g{k="b"} 2
# TYPE lone gauge
lone -Inf
# TYPE u untyped
u +Inf
# TYPE c counter
c{k="a"} +Inf
c{k="new"} NaN
# TYPE h histogram
h_bucket{le="+Inf"} 4
h_sum NaN
h_count 4
# TYPE s summary
s{quantile="0.5"} NaN
s_sum 0
s_count 0
`)
	got := cur.DropNonFinite(prev)
	var names []string
	for _, n := range got {
		names = append(names, fmt.Sprintf("%s carried=%t", n, n.Carried))
	}
	want := `[c{k="a"} = +Inf carried=true c{k="new"} = NaN carried=false g{k="a"} = NaN carried=false h = NaN carried=true lone = -Inf carried=false u = +Inf carried=false]`
	if fmt.Sprint(names) != want {
		t.Errorf("dropped\n%v\nwant\n%s", names, want)
	}
	if v, ok := cur.Value("c", map[string]string{"k": "a"}); !ok || v != 5 {
		t.Errorf("counter c{k=a} = %v, %v; want its previous 5", v, ok)
	}
	if s := cur.Series("c", map[string]string{"k": "new"}); len(s) != 0 {
		t.Errorf("counter with no previous value kept: %v", s)
	}
	if v, ok := cur.Value("g", nil); !ok || v != 2 {
		t.Errorf("gauge g = %v, %v; want the finite series 2 alone", v, ok)
	}
	if cur.Has("lone") || cur.Has("u") {
		t.Error("a family left with no series is still there")
	}
	if v, _ := cur.Value("h_count", nil); v != 3 {
		t.Errorf("histogram count %v, want the previous scrape's 3 (carried whole)", v)
	}
	if v, ok := cur.Value("s_count", nil); !ok || v != 0 {
		t.Errorf("summary with NaN quantiles: count %v, %v; want kept", v, ok)
	}
}

// TestDropHuge: a value beyond ±MaxValue is dropped like an Inf — the
// sampler turns seconds into milliseconds and sums series, and two
// gauges of 1e308 summed to +Inf, a Sample samples.jsonl could not hold.
func TestDropHuge(t *testing.T) {
	f, err := Parse(strings.NewReader("# TYPE g gauge\ng{k=\"a\"} 1e308\ng{k=\"b\"} -1e301\ng{k=\"c\"} 1e300\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.DropNonFinite(nil)); got != `[g{k="a"} = 1e+308 g{k="b"} = -1e+301]` {
		t.Errorf("dropped %s", got)
	}
	if v, ok := f.Value("g", nil); !ok || v != MaxValue {
		t.Errorf("g = %v, %v; want the one usable series, 1e300", v, ok)
	}
}
