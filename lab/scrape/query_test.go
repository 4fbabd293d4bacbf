package scrape

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func load(t *testing.T, name string) Families {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fam, err := Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return fam
}

type L = map[string]string

func TestSum(t *testing.T) {
	f := load(t, "gateway.prom")
	for _, tc := range []struct {
		name  string
		match L
		want  float64
	}{
		{"levee_requests_total", nil, 250},
		{"levee_requests_total", L{"outcome": "ok"}, 200},
		{"levee_requests_total", L{"outcome": "ok", "priority": "P0"}, 120},
		{"levee_requests_total", L{"route": "chat"}, 10},
		{"levee_requests_total", L{"outcome": "timeout"}, 0},
		{"levee_inflight", nil, 50},
		{"levee_no_such_metric", nil, 0},
		{"levee_queue_wait_seconds_count", nil, 200},
		{"levee_queue_wait_seconds_sum", L{"class": "ai"}, 21.5},
		{"go_gc_duration_seconds_count", nil, 40},
		{"levee_build_info", nil, 1},
		{"levee_overload_level", L{"absent": ""}, 1}, // "" matches a missing label
	} {
		if got := f.Sum(tc.name, tc.match); got != tc.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.match, got, tc.want)
		}
	}
	var nilF Families
	if nilF.Sum("x", nil) != 0 {
		t.Error("nil Families")
	}
}

func TestValue(t *testing.T) {
	f := load(t, "gateway.prom")
	for _, tc := range []struct {
		name   string
		labels L
		want   float64
		ok     bool
	}{
		{"levee_overload_level", nil, 1, true},
		{"levee_lag_probe_seconds", L{"quantile": "0.99"}, 0.038, true},
		{"levee_lag_probe_seconds", nil, 0, false}, // two series: ambiguous
		{"levee_inflight", L{"class": "ai"}, 48, true},
		{"levee_inflight", L{"class": "agent"}, 0, false},
		{"go_goroutines", nil, 3120, true},
		{"levee_missing", nil, 0, false},
		{"levee_queue_wait_seconds", L{"class": "ai"}, 0, false}, // a histogram has no single value
		{"levee_build_info", L{"version": `dev "quoted" \ path`}, 1, true},
	} {
		got, ok := f.Value(tc.name, tc.labels)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Value(%s, %v) = %v, %v; want %v, %v", tc.name, tc.labels, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMaxAndByLabel(t *testing.T) {
	f := load(t, "gateway.prom")
	if m, ok := f.Max("levee_inflight", nil); !ok || m != 48 {
		t.Errorf("Max inflight = %v, %v", m, ok)
	}
	if m, ok := f.Max("levee_upstream_up", L{"node": "127.0.0.1:4002"}); !ok || m != 0 {
		t.Errorf("Max up node 2 = %v, %v", m, ok)
	}
	if _, ok := f.Max("levee_missing", nil); ok {
		t.Error("Max of a missing metric reported ok")
	}
	got := f.ByLabel("levee_shed_total", "reason")
	want := map[string]float64{"overload": 40, "queue_full": 7}
	if !equalMaps(got, want) {
		t.Errorf("ByLabel shed reason = %v, want %v", got, want)
	}
	got = f.ByLabelMatch("levee_requests_total", "priority", L{"outcome": "ok"})
	if want := map[string]float64{"P0": 120, "P1": 80}; !equalMaps(got, want) {
		t.Errorf("ByLabelMatch = %v, want %v", got, want)
	}
	got = f.ByLabel("levee_overload_level", "class")
	if want := map[string]float64{"": 1}; !equalMaps(got, want) {
		t.Errorf("ByLabel on an unlabelled metric = %v", got)
	}
}

func equalMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestHistogramQuantile(t *testing.T) {
	f := load(t, "gateway.prom")
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range []struct {
		q     float64
		match L
		want  float64
		ok    bool
	}{
		// ai: 10 ≤ 0.01, 50 in (0.01, 0.1], 40 in (0.1, 1].
		{0.05, L{"class": "ai"}, 0.005, true},            // rank 5 of 10 in [0, 0.01]
		{0.5, L{"class": "ai"}, 0.01 + 0.09*40/50, true}, // rank 50: 40 of 50 into (0.01, 0.1]
		{0.99, L{"class": "ai"}, 0.1 + 0.9*39/40, true},
		{1, L{"class": "ai"}, 1, true},
		// agent: half above 1 s, in +Inf: the highest finite bound.
		{0.99, L{"class": "agent"}, 1, true},
		{0.25, L{"class": "agent"}, 0.1 + 0.9*25/50, true},
		// merged: 200 observations; rank 100 falls in (0.1, 1] where the
		// merged cumulative goes 60 → 150.
		{0.5, nil, 0.1 + 0.9*40/90, true},
		{0.5, L{"class": "nope"}, 0, false},
		{1.5, nil, 0, false},
		{math.NaN(), nil, 0, false},
	} {
		got, ok := f.HistogramQuantile("levee_queue_wait_seconds", tc.q, tc.match)
		if ok != tc.ok || !near(got, tc.want) {
			t.Errorf("HistogramQuantile(%v, %v) = %v, %v; want %v, %v", tc.q, tc.match, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := f.HistogramQuantile("levee_inflight", 0.5, nil); ok {
		t.Error("quantile of a gauge reported ok")
	}
	if _, ok := f.HistogramQuantile("levee_missing", 0.5, nil); ok {
		t.Error("quantile of a missing metric reported ok")
	}
}

func TestDeltas(t *testing.T) {
	prev := load(t, "gateway.prom")
	cur := load(t, "gateway_later.prom")
	if d := cur.SumDelta(nil, "levee_requests_total", nil); d != 0 {
		t.Errorf("delta without a baseline = %v, want 0", d)
	}
	// ok P0 predict 120 → 150 (+30), ok P1 predict 80 → 20 (reset: +20),
	// new series timeout P0 chat 5 (+5); shed 40 → 100 (+60); others same.
	if d := cur.SumDelta(prev, "levee_requests_total", L{"outcome": "ok"}); d != 50 {
		t.Errorf("ok delta = %v, want 50", d)
	}
	if d := cur.SumDelta(prev, "levee_requests_total", nil); d != 115 {
		t.Errorf("all delta = %v, want 115", d)
	}
	got := cur.ByLabelDelta(prev, "levee_requests_total", "outcome", nil)
	want := map[string]float64{"ok": 50, "shed_overload": 60, "shed_queue_full": 0, "fallback": 0, "timeout": 5}
	if !equalMaps(got, want) {
		t.Errorf("ByLabelDelta = %v, want %v", got, want)
	}
	for _, tc := range []struct{ prev, cur, want float64 }{{10, 15, 5}, {10, 10, 0}, {10, 3, 3}, {0, 0, 0}} {
		if got := CounterDelta(tc.prev, tc.cur); got != tc.want {
			t.Errorf("CounterDelta(%v, %v) = %v, want %v", tc.prev, tc.cur, got, tc.want)
		}
	}
	if r := RatePerSecond(100, 150, 250*time.Millisecond); r != 200 {
		t.Errorf("RatePerSecond = %v, want 200", r)
	}
	if r := RatePerSecond(100, 150, 0); r != 0 {
		t.Errorf("RatePerSecond over 0 s = %v", r)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"levee_x{a=\"1\" 2\n",                                     // unterminated labels
		"# TYPE levee_x counter\nlevee_x abc\n",                   // not a number
		"# TYPE levee_x gauge\n# TYPE levee_x gauge\nlevee_x 1\n", // TYPE twice
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func TestScrapeHTTP(t *testing.T) {
	body, err := os.ReadFile("testdata/gateway.prom")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	})
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("levee_x{ 1\n")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	f, err := Scrape(ctx, srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Value("go_goroutines", nil); !ok || v != 3120 {
		t.Errorf("scraped go_goroutines = %v, %v", v, ok)
	}
	for _, path := range []string{"/missing", "/broken"} {
		if _, err := Scrape(ctx, srv.Client(), srv.URL+path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Scrape %s: error %v should name the URL", path, err)
		}
	}
	srv.Close()
	if _, err := Scrape(ctx, http.DefaultClient, srv.URL+"/metrics"); err == nil {
		t.Error("Scrape of a closed server succeeded")
	}
}

// TestGolden parses each testdata/*.prom and compares a digest of every
// family (type, series count, sum, and p50/p99 for histograms) with
// testdata/*.golden.json. Run with -update to rewrite.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.prom")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f := load(t, filepath.Base(file))
			type digest struct {
				Type   string   `json:"type"`
				Series int      `json:"series"`
				Sum    float64  `json:"sum"`
				P50    *float64 `json:"p50,omitempty"`
				P99    *float64 `json:"p99,omitempty"`
			}
			out := map[string]digest{}
			names := make([]string, 0, len(f))
			for n := range f {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				mf := f[n]
				d := digest{Type: mf.GetType().String(), Series: len(mf.GetMetric()), Sum: f.Sum(n, nil)}
				if p, ok := f.HistogramQuantile(n, 0.5, nil); ok {
					d.P50 = &p
					p99, _ := f.HistogramQuantile(n, 0.99, nil)
					d.P99 = &p99
				}
				out[n] = d
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".prom") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
				t.Errorf("%s differs from %s:\n%s", file, golden, got)
			}
		})
	}
}
