package fakemodel

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

func TestDefaultKnobsValid(t *testing.T) {
	k := DefaultKnobs()
	if err := k.Validate(); err != nil {
		t.Fatalf("DefaultKnobs().Validate() = %v", err)
	}
	// The doc comment promises 3 nodes ≈ 215 req/s of capacity.
	capacity := 3 * float64(k.Slots) / k.MeanService().Seconds()
	if capacity < 200 || capacity > 230 {
		t.Fatalf("default 3-node capacity %.1f req/s, doc says ≈ 215", capacity)
	}
}

func TestKnobsValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Knobs)
		field string // "" when valid
	}{
		{"defaults", func(*Knobs) {}, ""},
		{"fixed zero", func(k *Knobs) { k.Latency = Latency{Dist: DistFixed, P50Ms: 1, P99Ms: 1} }, ""},
		{"uniform", func(k *Knobs) { k.Latency.Dist, k.Latency.MinMs, k.Latency.MaxMs = DistUniform, 10, 10 }, ""},
		{"reject", func(k *Knobs) { k.Overflow = OverflowReject }, ""},
		{"error+hang 1", func(k *Knobs) { k.ErrorRate, k.HangRate = 0.5, 0.5 }, ""},
		{"bad dist", func(k *Knobs) { k.Latency.Dist = "normal" }, "latency.dist"},
		{"p50 zero", func(k *Knobs) { k.Latency.P50Ms = 0 }, "latency.p50_ms"},
		{"p50 nan", func(k *Knobs) { k.Latency.P50Ms = math.NaN() }, "latency.p50_ms"},
		{"p99 below p50", func(k *Knobs) { k.Latency.P99Ms = 100 }, "latency.p99_ms"},
		{"p99 huge", func(k *Knobs) { k.Latency.P99Ms = maxMs + 1 }, "latency.p99_ms"},
		{"fixed negative", func(k *Knobs) { k.Latency.FixedMs = -1 }, "latency.fixed_ms"},
		{"max below min", func(k *Knobs) { k.Latency.MinMs, k.Latency.MaxMs = 50, 40 }, "latency.max_ms"},
		{"multiplier", func(k *Knobs) { k.LatencyMultiplier = 101 }, "latency_multiplier"},
		{"add negative", func(k *Knobs) { k.LatencyAddMs = -5 }, "latency_add_ms"},
		{"ttft inf", func(k *Knobs) { k.TTFTMs = math.Inf(1) }, "ttft_ms"},
		{"tokens zero", func(k *Knobs) { k.TokensPerS = 0 }, "tokens_per_s"},
		{"ms per 1k", func(k *Knobs) { k.MsPer1kTokens = -1 }, "ms_per_1k_tokens"},
		{"slots zero", func(k *Knobs) { k.Slots = 0 }, "slots"},
		{"overflow", func(k *Knobs) { k.Overflow = "drop" }, "overflow"},
		{"queue size", func(k *Knobs) { k.QueueSize = -1 }, "queue_size"},
		{"slowdown", func(k *Knobs) { k.Slowdown = -1 }, "slowdown"},
		{"error rate", func(k *Knobs) { k.ErrorRate = 1.5 }, "error_rate"},
		{"hang rate", func(k *Knobs) { k.HangRate = -0.1 }, "hang_rate"},
		{"error and hang both 1", func(k *Knobs) { k.ErrorRate, k.HangRate = 1, 1 }, ""},
		{"error 0.5, hang 1: chaos defaults", func(k *Knobs) { k.ErrorRate, k.HangRate = 0.5, 1 }, ""},
		{"error rate nan", func(k *Knobs) { k.ErrorRate = math.NaN() }, "error_rate"},
		{"hang rate over 1", func(k *Knobs) { k.HangRate = 1.01 }, "hang_rate"},
		{"churn", func(k *Knobs) { k.ChurnMBPerS = -1 }, "churn_mb_per_s"},
		{"hog duty", func(k *Knobs) { k.CPUHogDuty = 1 }, "cpu_hog_duty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := DefaultKnobs()
			tt.edit(&k)
			err := k.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ke *KnobError
			if !errors.As(err, &ke) || ke.Field != tt.field {
				t.Fatalf("Validate() = %v, want a KnobError on %q", err, tt.field)
			}
			if !strings.Contains(ke.Msg, "must be") {
				t.Fatalf("message %q does not state the allowed values", ke.Msg)
			}
		})
	}
}

func TestKnobsPatch(t *testing.T) {
	base := DefaultKnobs()
	tests := []struct {
		name  string
		patch string
		field string // error field; "-" for an error without field; "" for success
		check func(t *testing.T, k Knobs)
	}{
		{"empty object", `{}`, "", func(t *testing.T, k Knobs) {
			if k != base {
				t.Fatalf("got %+v, want unchanged", k)
			}
		}},
		{"nested partial", `{"latency":{"p99_ms":900},"slots":4}`, "", func(t *testing.T, k Knobs) {
			if k.Latency.P99Ms != 900 || k.Latency.P50Ms != 200 || k.Latency.Dist != DistLognormal || k.Slots != 4 {
				t.Fatalf("got %+v", k)
			}
		}},
		{"pressure flat", `{"ballast_mb":8,"cpu_hog_goroutines":2,"cpu_hog_duty":0.5}`, "", func(t *testing.T, k Knobs) {
			if k.BallastMB != 8 || k.CPUHogGoroutines != 2 || k.CPUHogDuty != 0.5 {
				t.Fatalf("got %+v", k.Config)
			}
		}},
		{"bool", `{"abort_on_disconnect":true}`, "", func(t *testing.T, k Knobs) {
			if !k.AbortOnDisconnect {
				t.Fatal("abort_on_disconnect not set")
			}
		}},
		{"unknown knob", `{"slotz":3}`, "slotz", nil},
		{"unknown nested", `{"latency":{"p95_ms":3}}`, "latency.p95_ms", nil},
		{"wrong type", `{"slots":"many"}`, "slots", nil},
		{"wrong nested type", `{"latency":{"p50_ms":true}}`, "latency.p50_ms", nil},
		{"out of range", `{"error_rate":2}`, "error_rate", nil},
		{"cross-field", `{"latency":{"p50_ms":1000}}`, "latency.p99_ms", nil},
		{"not an object", `[1,2]`, "-", nil},
		{"trailing", `{"slots":3} {"slots":4}`, "-", nil},
		{"empty", ``, "-", nil},
		{"malformed", `{"slots":`, "-", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.Patch([]byte(tt.patch))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Patch = %v", err)
				}
				tt.check(t, got)
				return
			}
			var ke *KnobError
			if !errors.As(err, &ke) {
				t.Fatalf("Patch = %v, want a KnobError", err)
			}
			if tt.field != "-" && ke.Field != tt.field {
				t.Fatalf("error field %q (%v), want %q", ke.Field, err, tt.field)
			}
			if got != base {
				t.Fatalf("failed Patch returned changed knobs %+v", got)
			}
		})
	}
	if base != DefaultKnobs() {
		t.Fatal("Patch changed its receiver")
	}
}

func TestLoadKnobsYAML(t *testing.T) {
	k, err := LoadKnobsYAML(strings.NewReader("latency:\n  dist: fixed\n  fixed_ms: 50\nslots: 8\nballast_mb: 4\n"), DefaultKnobs())
	if err != nil {
		t.Fatal(err)
	}
	if k.Latency.Dist != DistFixed || k.Latency.FixedMs != 50 || k.Slots != 8 || k.BallastMB != 4 || k.TTFTMs != 200 {
		t.Fatalf("got %+v", k)
	}
	if k.MeanService() != 50*time.Millisecond {
		t.Fatalf("MeanService = %v, want 50ms", k.MeanService())
	}
	for _, bad := range []struct{ yaml, want string }{
		{"slotz: 3\n", "field slotz not found"},
		// Names are exact and given once, as in a JSON patch
		// (docs/CONTRACTS.md), in yaml.v3's words.
		{"SLOTS: 3\n", "line 1: field SLOTS not found"},
		{"latency:\n  P50_MS: 9\n", "line 2: field P50_MS not found"},
		{"slots: 3\nslots: 4\n", `line 2: mapping key "slots" already defined at line 1`},
		{"slots: 0\n", "knob slots"},
		{"latency: [1]\n", "cannot unmarshal"},
		{"slots: many\n", "cannot unmarshal"},
		// yaml.v3 alone would keep the first document, or truncate to 2.
		{"slots: 4\n---\nslots: 9\n", "line 2: more than one YAML document"},
		{"slots: 2.5\n", "line 1: slots: must be an integer, got the number 2.5"},
		{"backpressure_queue: 7.5\n", "backpressure_queue: must be an integer"},
	} {
		k, err := LoadKnobsYAML(strings.NewReader(bad.yaml), DefaultKnobs())
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("LoadKnobsYAML(%q) = %v, want %q", bad.yaml, err, bad.want)
		}
		if k != DefaultKnobs() {
			t.Errorf("LoadKnobsYAML(%q) changed the base: %+v", bad.yaml, k)
		}
	}
	if k, err := LoadKnobsYAML(strings.NewReader(""), DefaultKnobs()); err != nil || k != DefaultKnobs() {
		t.Errorf("empty YAML: %v, %+v", err, k)
	}
}

func TestServiceTimeAndMean(t *testing.T) {
	k := DefaultKnobs()
	// Lognormal mean = exp(mu + sigma²/2).
	mu, sigma := math.Log(200), (math.Log(600)-math.Log(200))/z99
	want := math.Exp(mu + sigma*sigma/2)
	if got := k.MeanService().Seconds() * 1000; math.Abs(got-want) > 1e-6 {
		t.Fatalf("MeanService = %.6f ms, want %.6f", got, want)
	}
	k.LatencyMultiplier, k.LatencyAddMs = 2, 10
	if got := k.MeanService().Seconds() * 1000; math.Abs(got-(2*want+10)) > 1e-6 {
		t.Fatalf("MeanService with ×2 +10 = %.6f ms, want %.6f", got, 2*want+10)
	}
	k.MsPer1kTokens, k.Slowdown, k.Slots = 100, 1, 10
	// (100×2 + 10 + 500 tokens × 0.1 ms) × (1 + 1 × 5/10) = 260 × 1.5 = 390 ms.
	if got := k.ServiceTime(100*time.Millisecond, 500, 5); got != 390*time.Millisecond {
		t.Fatalf("ServiceTime = %v, want 390ms", got)
	}
	// TTFT: (200×2 + 10) × (1 + 10/10) = 820 ms; a 500-token prompt adds
	// 500 × 0.1 ms × 2 = 100 ms; interval (20 ms × 2 + 0.1 ms) × 2: a
	// model ×2 slower streams its tokens twice as slowly too.
	if got := k.TTFT(10, 0); got != 820*time.Millisecond {
		t.Fatalf("TTFT = %v, want 820ms", got)
	}
	if got := k.TTFT(10, 500); got != 920*time.Millisecond {
		t.Fatalf("TTFT of a 500-token prompt = %v, want 920ms", got)
	}
	if got := k.TokenInterval(10); got != 80200*time.Microsecond {
		t.Fatalf("TokenInterval = %v, want 80.2ms", got)
	}
}

// TestKnobsWireForm: the knobs' JSON is wire.KnobPatch with every knob
// set, and applying it to other knobs reproduces them.
func TestKnobsWireForm(t *testing.T) {
	k := DefaultKnobs()
	k.Slots, k.Latency.P99Ms, k.BallastMB, k.AbortOnDisconnect = 7, 900, 12, true
	p := k.AsPatch()
	if got, want := p.Names(), wire.KnobNames(); !slices.Equal(got, want) {
		t.Errorf("AsPatch sets %v, want every knob %v", got, want)
	}
	var zero Knobs
	if got := zero.Apply(p); got != k {
		t.Errorf("Apply(AsPatch()) = %+v, want %+v", got, k)
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var back Knobs
	if err := json.Unmarshal(b, &back); err != nil || back != k {
		t.Errorf("JSON round trip = %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"slotz":1}`), &back); err == nil {
		t.Error("an unknown knob decoded without error")
	}
}

// TestFateShares: over many requests with a fixed seed, a node hangs
// HangRate of them and fails ErrorRate × (1 − HangRate): the error draw is
// independent of the hang draw, for any pair of rates.
func TestFateShares(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct{ hang, err float64 }{
		{0, 0}, {0, 0.25}, {0.25, 0}, {0.3, 0.5}, {0.5, 0.5}, {0.6, 0.6}, {1, 0.5}, {0.02, 1}, {1, 1},
	} {
		k := DefaultKnobs()
		k.HangRate, k.ErrorRate = tc.hang, tc.err
		if err := k.Validate(); err != nil {
			t.Fatalf("hang %g error %g: %v", tc.hang, tc.err, err)
		}
		r := rand.New(rand.NewPCG(42, 43))
		hangs, fails := 0, 0
		for range n {
			h, f := k.fate(r)
			if h && f {
				t.Fatalf("hang %g error %g: a request both hung and failed", tc.hang, tc.err)
			}
			if h {
				hangs++
			}
			if f {
				fails++
			}
		}
		check := func(what string, count int, want float64) {
			got := float64(count) / n
			t.Logf("hang %g error %g: %s share %.4f (want %.4f)", tc.hang, tc.err, what, got, want)
			if tol := 4*math.Sqrt(want*(1-want)/n) + 1e-12; math.Abs(got-want) > tol {
				t.Errorf("hang %g error %g: %s share %.4f, want %.4f ± %.4f", tc.hang, tc.err, what, got, want, tol)
			}
		}
		check("hang", hangs, tc.hang)
		check("error", fails, tc.err*(1-tc.hang))
	}
}

// TestKnobNamesExact: a patch names each knob exactly as the wire does,
// once. encoding/json alone took {"SLOTS":3} for slots and kept the last of
// {"slots":9,"slots":10}.
func TestKnobNamesExact(t *testing.T) {
	for _, tc := range []struct {
		name, patch, want string // want "" when valid
	}{
		{"exact", `{"slots":3,"latency":{"p50_ms":100,"p99_ms":300},"ballast_mb":1}`, ""},
		{"whitespace and nulls", ` { "slots" : 3 , "latency" : null } `, ""},
		{"upper case", `{"SLOTS":3}`, "knob SLOTS: unknown knob (names are lower case: slots)"},
		{"mixed case", `{"Error_Rate":0.1}`, "knob Error_Rate: unknown knob (names are lower case: error_rate)"},
		{"case of a pressure knob", `{"Ballast_MB":1}`, "knob Ballast_MB: unknown knob (names are lower case: ballast_mb)"},
		{"case of latency", `{"Latency":{"p50_ms":1}}`, "knob Latency: unknown knob (names are lower case: latency)"},
		{"case inside latency", `{"latency":{"P50_MS":100}}`, "knob latency.P50_MS: unknown knob (names are lower case: latency.p50_ms)"},
		{"unknown inside latency", `{"latency":{"nope":1}}`, "knob latency.nope: unknown knob"},
		{"latency knob at the top", `{"p50_ms":100}`, "knob p50_ms: unknown knob"},
		{"top knob inside latency", `{"latency":{"slots":3}}`, "knob latency.slots: unknown knob"},
		{"duplicate", `{"slots":9,"slots":10}`, "knob slots: given twice (name each knob once)"},
		{"duplicate inside latency", `{"latency":{"p99_ms":900,"p99_ms":1000}}`, "knob latency.p99_ms: given twice (name each knob once)"},
		{"duplicate latency", `{"latency":{"p99_ms":900},"latency":{"p50_ms":100}}`, "knob latency: given twice (name each knob once)"},
		{"case twin", `{"slots":3,"Slots":4}`, "knob Slots: unknown knob (names are lower case: slots)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := DefaultKnobs().Patch([]byte(tc.patch))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Patch(%s) = %v", tc.patch, err)
				}
				return
			}
			var ke *KnobError
			if !errors.As(err, &ke) || err.Error() != tc.want {
				t.Fatalf("Patch(%s) = %v, want the KnobError %q", tc.patch, err, tc.want)
			}
			if k != DefaultKnobs() {
				t.Fatalf("a refused patch changed the knobs")
			}
			var u Knobs
			if err := json.Unmarshal([]byte(tc.patch), &u); err == nil || err.Error() != tc.want {
				t.Fatalf("UnmarshalJSON(%s) = %v, want %q", tc.patch, err, tc.want)
			}
		})
	}
}

// TestKnobErrorWording: an error that blames no knob reads as its message
// alone (it read "knob : malformed JSON: …"); one that does names the knob
// by its dotted path.
func TestKnobErrorWording(t *testing.T) {
	for _, tc := range []struct{ patch, want string }{
		{`{"slots":`, "malformed JSON: unexpected EOF"},
		{``, "empty body: want a JSON knob object"},
		{`{"slots":3} {"slots":4}`, "trailing data after the knob object"},
		{`[1,2]`, "the knob patch must be an object, got a JSON array"},
		{`"slots"`, "the knob patch must be an object, got a JSON string"},
		{`{"slots":"many"}`, "knob slots: must be an integer, got a JSON string"},
		{`{"latency":5}`, "knob latency: must be an object, got a JSON number"},
		{`{"latency":{"p50_ms":true}}`, "knob latency.p50_ms: must be a number, got a JSON bool"},
		{`{"latency":{"nope":1}}`, "knob latency.nope: unknown knob"},
		{`{"slots":0}`, "knob slots: must be in [1, 100000], got 0"},
		// Ranges of whole numbers in digits: it read [0, 1e+06] and
		// [0, 1.6777216e+07].
		{`{"queue_size":-1}`, "knob queue_size: must be in [0, 1000000], got -1"},
		{`{"answer_tokens":-1}`, "knob answer_tokens: must be in [0, 16777216], got -1"},
		{`{"error_rate":1.5}`, "knob error_rate: must be in [0, 1], got 1.5"},
		{`{"latency_add_ms":1e300}`, "knob latency_add_ms: must be in [0, 600000], got 1e+300"},
	} {
		_, err := DefaultKnobs().Patch([]byte(tc.patch))
		var ke *KnobError
		if !errors.As(err, &ke) || err.Error() != tc.want {
			t.Errorf("Patch(%q) = %v, want the KnobError %q", tc.patch, err, tc.want)
		}
	}
	if got := (&KnobError{Msg: "x"}).Error(); got != "x" {
		t.Errorf("KnobError with no field: %q, want %q", got, "x")
	}
}
