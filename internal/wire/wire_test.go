package wire

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestOutcomeNamesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Outcomes() {
		name := o.String()
		if seen[name] || !regexp.MustCompile(`^[a-z_]+$`).MatchString(name) {
			t.Errorf("outcome %d: name %q is a duplicate or not snake_case", o, name)
		}
		seen[name] = true
		back, ok := ParseOutcome(name)
		if !ok || back != o {
			t.Errorf("ParseOutcome(%q) = %v, %v; want %v", name, back, ok, o)
		}
		var u Outcome
		if err := u.UnmarshalText([]byte(name)); err != nil || u != o {
			t.Errorf("UnmarshalText(%q) = %v, %v", name, u, err)
		}
	}
	for _, bad := range []string{"", "OK", "shed", "generator-dropped"} {
		if _, ok := ParseOutcome(bad); ok {
			t.Errorf("ParseOutcome(%q) ok, want unknown", bad)
		}
	}
	if _, err := NumOutcomes.MarshalText(); err == nil {
		t.Error("MarshalText of an invalid outcome: no error")
	}
	if got := Outcome(200).String(); got != "outcome(200)" {
		t.Errorf("invalid outcome String = %q", got)
	}
}

func TestOutcomeClasses(t *testing.T) {
	tests := []struct {
		o                          Outcome
		shed, admitted, fromServer bool
		reason                     string
	}{
		{OutcomeOK, false, true, true, ""},
		{OutcomeFallback, false, true, true, ""},
		{OutcomeShedRateLimit, true, false, true, "ratelimit"},
		{OutcomeShedOverload, true, false, true, "overload"},
		{OutcomeShedQueueFull, true, false, true, "queue_full"},
		{OutcomeShedQueueTimeout, true, false, true, "queue_timeout"},
		{OutcomeShedBudget, true, false, true, "budget"},
		{OutcomeTimeout, false, true, true, ""},
		{OutcomeError, false, true, true, ""},
		{OutcomeGeneratorDropped, false, false, false, ""},
	}
	if len(tests) != int(NumOutcomes) {
		t.Fatalf("table has %d outcomes, want %d", len(tests), NumOutcomes)
	}
	for _, tt := range tests {
		if tt.o.IsShed() != tt.shed || tt.o.Admitted() != tt.admitted || tt.o.FromServer() != tt.fromServer {
			t.Errorf("%v: shed %v admitted %v fromServer %v; want %v %v %v", tt.o,
				tt.o.IsShed(), tt.o.Admitted(), tt.o.FromServer(), tt.shed, tt.admitted, tt.fromServer)
		}
		r, ok := tt.o.ShedReason()
		if ok != tt.shed || (ok && r.String() != tt.reason) {
			t.Errorf("%v.ShedReason() = %v, %v; want %q", tt.o, r, ok, tt.reason)
		}
		if ok && r.Outcome() != tt.o {
			t.Errorf("%v.Outcome() = %v, want %v", r, r.Outcome(), tt.o)
		}
	}
	for _, r := range ShedReasons() {
		back, ok := ParseShedReason(r.String())
		if !ok || back != r {
			t.Errorf("ParseShedReason(%q) = %v, %v", r, back, ok)
		}
	}
}

func TestOutcomeMapKeysEncodeAsNames(t *testing.T) {
	m := map[Outcome]int{OutcomeOK: 3, OutcomeShedQueueFull: 1}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"ok":3,"shed_queue_full":1}` {
		t.Errorf("got %s", b)
	}
	var back map[Outcome]int
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, m) {
		t.Errorf("round trip = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"nope":1}`), &back); err == nil {
		t.Error("unknown outcome key decoded without error")
	}
	var r ShedReason
	if err := r.UnmarshalText([]byte("queue_full")); err != nil || r != ShedQueueFull {
		t.Errorf("ShedReason UnmarshalText = %v, %v", r, err)
	}
}

func TestReadyLineRoundTrip(t *testing.T) {
	tests := []Ready{
		{Kind: KindGateway, Listen: "127.0.0.1:4", Admin: "127.0.0.1:5", PID: 7},
		{Kind: KindFakeModel, Listen: "127.0.0.1:9", Admin: "127.0.0.1:9", PID: 8, Nodes: []string{"127.0.0.1:9", "127.0.0.1:10"}},
	}
	for _, r := range tests {
		line := r.Line()
		if strings.ContainsRune(string(line), '\n') {
			t.Errorf("line %s has a newline", line)
		}
		got, ok := ParseReady(append([]byte("  "), append(line, '\n')...))
		if !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("ParseReady(%s) = %+v, %v; want %+v", line, got, ok, r)
		}
	}
	if got := string(tests[0].Line()); got != `{"levee_ready":{"kind":"gateway","listen":"127.0.0.1:4","admin":"127.0.0.1:5","pid":7}}` {
		t.Errorf("gateway line = %s", got)
	}
	for _, bad := range []string{
		`{"levee_ready":{"kind":"gateway"}}`, // no listen address
		`{"levee_ready":null}`,
		`levee_ready but not json`,
		`{"other":{"listen":"x"}}`,
		``,
	} {
		if r, ok := ParseReady([]byte(bad)); ok {
			t.Errorf("ParseReady(%q) = %+v, want not a ready line", bad, r)
		}
	}
}

func TestNameLists(t *testing.T) {
	pr, lv, rt, lr, cl := Priorities(), Levels(), Routes(), LoadRoutes(), Classes()
	df, sc, fo := DefenseNames(), SubcallResults(), FakeOutcomes()
	for name, list := range map[string][]string{
		"priorities": pr[:], "levels": lv[:], "routes": rt[:], "load routes": lr[:], "classes": cl[:],
		"defenses": df[:], "subcall results": sc[:], "fake outcomes": fo[:],
	} {
		seen := map[string]bool{}
		for _, n := range list {
			if n == "" || seen[n] {
				t.Errorf("%s: empty or duplicate name %q in %v", name, n, list)
			}
			seen[n] = true
		}
	}
	for i, p := range Priorities() {
		if got, ok := PriorityIndex(p); !ok || got != i {
			t.Errorf("PriorityIndex(%q) = %d, %v", p, got, ok)
		}
	}
	if _, ok := PriorityIndex("p0"); ok {
		t.Error(`PriorityIndex("p0") ok; the wire spelling is exact`)
	}
	for i, l := range Levels() {
		if got, ok := LevelIndex(strings.ToUpper(l)); !ok || got != i || LevelName(i) != l {
			t.Errorf("level %q: index %d %v, name %q", l, got, ok, LevelName(i))
		}
	}
	if LevelName(-1) != "" || LevelName(NumLevels) != "" {
		t.Error("LevelName out of range is not empty")
	}
}

func TestDefenses(t *testing.T) {
	var d Defenses
	for _, n := range DefenseNames() {
		if on, ok := d.Get(n); !ok || on {
			t.Errorf("zero Defenses.Get(%q) = %v, %v", n, on, ok)
		}
		if !d.Set(n, true) {
			t.Errorf("Set(%q) = false", n)
		}
	}
	if d != AllDefenses(true) {
		t.Errorf("every defense set = %+v, want all on", d)
	}
	if d.Set("shields", true) {
		t.Error(`Set("shields") = true`)
	}
	if _, ok := d.Get("shields"); ok {
		t.Error(`Get("shields") ok`)
	}
	// The struct tags spell exactly the defense names, in order, so the
	// JSON and YAML forms and the name list cannot drift apart.
	b, _ := json.Marshal(AllDefenses(false))
	var keys []string
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		dec.Token()
	}
	names := DefenseNames()
	if !reflect.DeepEqual(keys, names[:]) {
		t.Errorf("JSON keys %v, want %v", keys, names)
	}
	if m := AllDefenses(true).Map(); len(m) != NumDefenses {
		t.Errorf("Map has %d entries", len(m))
	}
	var y Defenses
	if err := yaml.Unmarshal([]byte("guard: true\nfallback: true\n"), &y); err != nil || !y.Guard || !y.Fallback || y.RateLimit {
		t.Errorf("YAML decode = %+v, %v", y, err)
	}
}

func TestKnobPatchNamesMatchConstants(t *testing.T) {
	full := KnobPatch{
		Latency:           &LatencyPatch{Dist: Ptr(DistFixed), P50Ms: Ptr(1.0), P99Ms: Ptr(2.0), FixedMs: Ptr(3.0), MinMs: Ptr(4.0), MaxMs: Ptr(5.0)},
		LatencyMultiplier: Ptr(1.0), LatencyAddMs: Ptr(0.0), TTFTMs: Ptr(1.0), TokensPerS: Ptr(1.0), MsPer1kTokens: Ptr(0.0),
		Slots: Ptr(1), Overflow: Ptr(OverflowQueue), QueueSize: Ptr(0), Slowdown: Ptr(0.0), ErrorRate: Ptr(0.0), HangRate: Ptr(0.0),
		AbortOnDisconnect: Ptr(false), AnswerTokens: Ptr(0),
		BackpressureQueue: Ptr(0), BackpressureHeapMB: Ptr(0.0), BackpressureCPU: Ptr(0.0), BackpressureForce: Ptr(false),
		PressurePatch: PressurePatch{ChurnMBPerS: Ptr(0.0), BallastMB: Ptr(0.0), CPUHogGoroutines: Ptr(0), CPUHogDuty: Ptr(0.0)},
	}
	lat := func(n string) string { return KnobLatency + "." + n }
	want := []string{
		lat(KnobDist), lat(KnobP50Ms), lat(KnobP99Ms), lat(KnobFixedMs), lat(KnobMinMs), lat(KnobMaxMs),
		KnobLatencyMultiplier, KnobLatencyAddMs, KnobTTFTMs, KnobTokensPerS, KnobMsPer1kTokens, KnobSlots,
		KnobOverflow, KnobQueueSize, KnobSlowdown, KnobErrorRate, KnobHangRate, KnobAbortOnDisconnect, KnobAnswerTokens,
		KnobBackpressureQueue, KnobBackpressureHeapMB, KnobBackpressureCPU, KnobBackpressureForce,
		KnobChurnMBPerS, KnobBallastMB, KnobCPUHogGoroutines, KnobCPUHogDuty,
	}
	if got := KnobNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("KnobNames() = %v\nwant        %v", got, want)
	}
	if got := full.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v\nwant      %v", got, want)
	}
	// JSON and YAML carry the same names, flat except latency, and a
	// decoded document equals the patch.
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var back KnobPatch
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, full) {
		t.Errorf("JSON round trip: %v\n%s", err, b)
	}
	y, err := yaml.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var yback KnobPatch
	if err := yaml.Unmarshal(y, &yback); err != nil || !reflect.DeepEqual(yback, full) {
		t.Errorf("YAML round trip: %v\n%s", err, y)
	}
	if !strings.Contains(string(b), `"cpu_hog_duty":0`) || !strings.Contains(string(y), "\ncpu_hog_duty: 0") {
		t.Errorf("pressure knobs are not flat:\n%s\n%s", b, y)
	}
	if !(KnobPatch{}).IsZero() || full.IsZero() {
		t.Error("IsZero wrong")
	}
	if b, _ := json.Marshal(KnobPatch{}); string(b) != "{}" {
		t.Errorf("empty patch encodes as %s", b)
	}
}

func TestKnobPatchMergeAndPick(t *testing.T) {
	base := KnobPatch{Slots: Ptr(16), Latency: &LatencyPatch{P50Ms: Ptr(200.0), P99Ms: Ptr(600.0)}, LatencyMultiplier: Ptr(1.0)}
	patch := KnobPatch{Slots: Ptr(4), Latency: &LatencyPatch{P99Ms: Ptr(900.0)}, PressurePatch: PressurePatch{BallastMB: Ptr(64.0)}}

	merged := base.Merge(patch)
	want := KnobPatch{Slots: Ptr(4), Latency: &LatencyPatch{P50Ms: Ptr(200.0), P99Ms: Ptr(900.0)}, LatencyMultiplier: Ptr(1.0),
		PressurePatch: PressurePatch{BallastMB: Ptr(64.0)}}
	if !reflect.DeepEqual(merged, want) {
		t.Errorf("Merge = %s, want %s", js(merged), js(want))
	}
	// Merge copies: changing the result changes neither input.
	*merged.Slots = 99
	*merged.Latency.P50Ms = 1
	if *base.Slots != 16 || *patch.Slots != 4 || *base.Latency.P50Ms != 200 {
		t.Error("Merge shares pointers with its inputs")
	}

	// Pick on the state before the patch gives the patch that undoes it;
	// knobs the state does not hold stay unset.
	undo := base.Pick(patch)
	wantUndo := KnobPatch{Slots: Ptr(16), Latency: &LatencyPatch{P99Ms: Ptr(600.0)}}
	if !reflect.DeepEqual(undo, wantUndo) {
		t.Errorf("Pick = %s, want %s", js(undo), js(wantUndo))
	}
	if got := base.Merge(patch).Merge(undo).Merge(KnobPatch{PressurePatch: PressurePatch{BallastMB: nil}}); *got.Slots != 16 || *got.Latency.P99Ms != 600 {
		t.Errorf("patch then undo = %s", js(got))
	}
	if got := base.Pick(KnobPatch{TTFTMs: Ptr(1.0)}); !got.IsZero() || got.Latency != nil {
		t.Errorf("Pick of a knob base lacks = %s, want empty", js(got))
	}
	if got := (KnobPatch{}).Merge(KnobPatch{}); got.Latency != nil {
		t.Error("Merge of empties allocated a latency patch")
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestMetricCatalogue(t *testing.T) {
	name := regexp.MustCompile(`^levee_[a-z0-9_]+$`)
	seen := map[string]bool{}
	all := append(append(GatewayMetrics(), GatewayRedisMetrics()...), FakeModelMetrics()...)
	for _, m := range all {
		if !name.MatchString(m.Name) || seen[m.Name] {
			t.Errorf("%q: not a levee_ snake_case name, or a duplicate", m.Name)
		}
		seen[m.Name] = true
		switch m.Type {
		case TypeCounter:
			if !strings.HasSuffix(m.Name, "_total") {
				t.Errorf("counter %s does not end in _total", m.Name)
			}
		case TypeGauge, TypeHistogram:
			if strings.HasSuffix(m.Name, "_total") {
				t.Errorf("%s %s ends in _total", m.Type, m.Name)
			}
		default:
			t.Errorf("%s: type %q", m.Name, m.Type)
		}
		for _, l := range m.Labels {
			if l == "quantile" || l == "le" {
				t.Errorf("%s carries the reserved label %q", m.Name, l)
			}
		}
		if m.Doc == "" {
			t.Errorf("%s has no doc", m.Name)
		}
	}
}
