package experiment

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodExperiment = `
name: t1
title: A test
articles: ["000", "003"]
duration: 40s
seed: 7
stages:
  - {duration: 10s, target: 100}
  - {duration: 30s, target: 1000}
arrival: poisson
mix:
  priorities: {P0: 1, P1: 1, P2: 2}
  routes: {predict: 3, chat: 1}
  prompt_tokens: {min: 10, max: 20}
  max_tokens: 32
client_timeout: 1500ms
nodes:
  count: 2
  knobs: {slots: 8, latency: {dist: fixed, fixed_ms: 100}}
gateway:
  defenses: {guard: false}
  limits: {classes: {ai: {algorithm: static, limit: 16, min: 1, max: 64, queue_size: 8, queue_timeout_ms: 300}}}
  memory_limit_mb: 256
faults:
  - {at: 20s, fault: node_kill, params: {node: 1}, for: 10s}
  - {at: 5s, fault: traffic_spike, params: {factor: 2, for: 8s}}
narration:
  - {at: 0s, kind: predict, text: "What happens?"}
  - {at: 20s, kind: watch, text: "Watch."}
thresholds:
  p0_success_rate: ">= 0.99"
  unaccounted: "== 0"
`

func TestParseExperimentHappy(t *testing.T) {
	e, err := ParseExperiment([]byte(goodExperiment))
	if err != nil {
		t.Fatal(err)
	}
	if e.Duration.D() != 40*time.Second || e.ClientTimeout.D() != 1500*time.Millisecond {
		t.Errorf("durations: %v %v", e.Duration, e.ClientTimeout)
	}
	if e.Tick.D() != DefaultTick || e.MaxOutstanding != DefaultMaxOutstanding || e.Gateway.Count != 1 {
		t.Errorf("defaults not filled: tick %v max_outstanding %d gateways %d", e.Tick, e.MaxOutstanding, e.Gateway.Count)
	}
	if e.Redis.Kind != RedisOff || e.Redis.Enabled() || e.Gateway.RestartDelay.D() != DefaultRestartDelay {
		t.Errorf("redis %+v restart_delay %v", e.Redis, e.Gateway.RestartDelay)
	}
	if len(e.Articles) != 2 || e.Articles[0] != "000" || e.Articles[1] != "003" {
		t.Errorf("articles %q", e.Articles)
	}
	th := e.ParsedThresholds()
	if len(th) != 2 || th[0].Name != "p0_success_rate" || th[0].Op != ">=" || th[0].Value != 0.99 {
		t.Errorf("thresholds: %+v", th)
	}
	// Normalize is idempotent.
	c := e.Clone()
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(e)
	b, _ := json.Marshal(c)
	if string(a) != string(b) {
		t.Errorf("Normalize not idempotent:\n%s\n%s", a, b)
	}
}

func TestParseExperimentErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: x\nduration: 1s\nbogus: 1\n", "line 3: field bogus not found"},
		{"nested unknown field", "name: x\nduration: 1s\nnodes:\n  count: 2\n  slotz: 3\n", "line 5: field slotz not found"},
		{"bad duration", "name: x\nduration: 10 seconds\n", "line 2: bad duration"},
		{"no name", "duration: 1s\n", "name: required"},
		{"no stages or duration", "name: x\n", "needs stages or a duration"},
		{"negative target", "name: x\nstages:\n  - {duration: 1s, target: -5}\n", "line 3: stages.0.target"},
		{"start rate above the cap", "name: x\nduration: 1s\nstart_rate: 1e12\n", "line 3: start_rate: 1e+12: want 0..1000000 req/s"},
		{"infinite start rate", "name: x\nduration: 1s\nstart_rate: .inf\n", "line 3: start_rate: +Inf: want 0..1000000 req/s"},
		{"NaN start rate", "name: x\nduration: 1s\nstart_rate: .nan\n", "line 3: start_rate: NaN: want 0..1000000 req/s"},
		{"infinite target", "name: x\nstages:\n  - {duration: 1s, target: .inf}\n", "line 3: stages.0.target: +Inf: want 0..1000000 req/s"},
		{"bad arrival", "name: x\nduration: 1s\narrival: bursty\n", "line 3: arrival"},
		{"bad priority", "name: x\nduration: 1s\nmix:\n  priorities: {P9: 1}\n", "line 4: mix.priorities.P9"},
		{"bad route", "name: x\nduration: 1s\nmix:\n  routes: {teleport: 1}\n", "line 4: mix.routes.teleport"},
		{"unknown fault", "name: x\nduration: 10s\nfaults:\n  - {at: 1s, fault: meteor}\n", "line 4: faults.0.fault"},
		{"bad fault param", "name: x\nduration: 10s\nfaults:\n  - {at: 1s, fault: model_latency, params: {multiplier: -1}}\n", "line 4: faults.0.params.multiplier: must be"},
		{"fault on a missing node", "name: x\nduration: 20s\nfaults: [{at: 5s, fault: node_kill, params: {node: 7}, for: 3s}]\n", "line 3: faults.0.params.node: node 7 does not exist (the lab has 3 nodes: 0..2, or -1 for all)"},
		{"knob fault on a missing node", "name: x\nduration: 20s\nnodes: {count: 2}\nfaults:\n  - {at: 1s, fault: model_latency, params: {node: 2}}\n", "line 5: faults.0.params.node: node 2 does not exist (the lab has 2 nodes"},
		{"gc_pressure on a missing node", "name: x\nduration: 20s\nfaults:\n  - at: 1s\n    fault: gc_pressure\n    params: {target: node, node: 3}\n", "line 6: faults.0.params.node"},
		{"node list with a missing node", "name: x\nduration: 20s\nfaults: [{at: 5s, fault: node_kill, params: {node: [0, 3]}, for: 3s}]\n", "line 3: faults.0.params.node: node 3 does not exist (the lab has 3 nodes: 0..2, or -1 for all)"},
		{"a parameter of the wrong type", "name: x\nduration: 20s\nfaults:\n  - at: 5s\n    fault: model_latency\n    params:\n      multiplier: fast\n", "line 7: faults.0.params.multiplier: must be a number, got a JSON string"},
		{"a duration parameter that is not one", "name: x\nduration: 20s\nfaults:\n  - at: 5s\n    fault: node_kill\n    params:\n      for: soon\n", `line 7: faults.0.params.for: duration "soon"`},
		{"node list with a node twice", "name: x\nduration: 20s\nfaults:\n  - at: 5s\n    fault: node_kill\n    params:\n      node: [0, 0]\n", "line 7: faults.0.params.node: node 0 is listed twice"},
		{"empty node list", "name: x\nduration: 20s\nfaults:\n  - {at: 1s, fault: model_slots, params: {node: []}}\n", "line 4: faults.0.params.node: the list is empty: name at least one node, or -1 for every node"},
		{"-1 in a node list", "name: x\nduration: 20s\nfaults:\n  - {at: 1s, fault: model_latency, params: {node: [0, -1]}}\n", "line 4: faults.0.params.node: -1 (every node) stands alone, not in a list"},
		{"negative in a node list", "name: x\nduration: 20s\nfaults:\n  - {at: 1s, fault: node_hang, params: {node: [-2]}}\n", "line 4: faults.0.params.node: entry 0: must be ≥ 0, got -2"},
		{"fraction in a node list", "name: x\nduration: 20s\nfaults:\n  - {at: 1s, fault: model_errors, params: {node: [0, 1.5]}}\n", "line 4: faults.0.params.node: entry 1: must be a node index (0-based), got 1.5"},
		{"node neither index nor list", "name: x\nduration: 20s\nfaults:\n  - {at: 1s, fault: gc_pressure, params: {target: node, node: two}}\n", "line 4: faults.0.params.node: must be a node index (0-based), -1 for every node, or a list of indexes such as [0, 2]; got \"two\""},
		{"missing redis master", "name: x\nduration: 20s\nredis: cluster\nfaults:\n  - {at: 1s, fault: redis_master_kill, params: {master: 3}}\n", "line 5: faults.0.params.master: master 3 does not exist (the cluster has 3 masters"},
		{"fault after end", "name: x\nduration: 10s\nfaults:\n  - {at: 11s, fault: node_kill}\n", "after the end"},
		{"bad narration kind", "name: x\nduration: 1s\nnarration:\n  - {at: 0s, kind: sing, text: la}\n", "line 4: narration.0.kind"},
		{"narration after end", "name: x\nduration: 10s\nnarration:\n  - {at: 0s, kind: watch, text: a}\n  - {at: 30s, kind: watch, text: b}\n", "line 5: narration.1.at: 30s is after the end of the run (10s)"},
		{"narration after the stages end", "name: x\nstages:\n  - {duration: 5s, target: 10}\nnarration:\n  - {at: 6s, kind: watch, text: a}\n", "line 5: narration.0.at: 6s is after the end of the run (5s)"},
		{"narration out of order", "name: x\nduration: 9s\nnarration:\n  - {at: 5s, kind: watch, text: a}\n  - {at: 1s, kind: watch, text: b}\n", "keep steps in order"},
		{"unknown threshold", "name: x\nduration: 1s\nthresholds:\n  happiness: \">= 1\"\n", "line 4: thresholds.happiness"},
		{"bad threshold expr", "name: x\nduration: 1s\nthresholds:\n  unaccounted: \"about 0\"\n", "want one of"},
		{"bad knob", "name: x\nduration: 1s\nnodes:\n  knobs: {slots: -3}\n", "nodes.knobs"},
		{"unknown knob", "name: x\nduration: 1s\nnodes:\n  knobs: {turbo: true}\n", "turbo"},
		{"bad limit", "name: x\nduration: 1s\ngateway:\n  limits: {classes: {ai: {limit: 0}}}\n", "gateway.limits"},
		{"unknown defense", "name: x\nduration: 1s\ngateway:\n  defenses: {moat: true}\n", "gateway.defenses.moat"},
		{"bad redis", "name: x\nduration: 1s\nredis: maybe\n", "line 3: redis"},
		{"bad redis url", "name: x\nduration: 1s\nredis: {kind: external, url: \"http://x\"}\n", "line 3: redis.url"},
		{"redis url with a kind", "name: x\nduration: 1s\nredis: {kind: auto, url: \"redis://x:1\"}\n", "line 3: redis.url: only for kind external"},
		{"redis unknown key", "name: x\nduration: 1s\nredis:\n  kind: cluster\n  shards: 3\n", "line 5: redis: field shards not found"},
		{"cluster too small", "name: x\nduration: 1s\nredis: {kind: cluster, masters: 2}\n", "line 3: redis.masters: 2: want ≥ 3"},
		{"cluster too big", "name: x\nduration: 1s\nredis: {kind: cluster, masters: 5, replicas: 2}\n", "15 processes"},
		{"negative replicas", "name: x\nduration: 1s\nredis: {kind: cluster, replicas: -1}\n", "redis.replicas"},
		{"masters on a server", "name: x\nduration: 1s\nredis: {kind: server, masters: 3}\n", "only for kind cluster"},
		{"redis list", "name: x\nduration: 1s\nredis: [auto]\n", "line 3: redis: want one of"},
		{"tick too slow", "name: x\nduration: 1s\ntick: 1s\n", "tick"},
		{"empty", "", "empty file"},
		{"bad article", "name: x\nduration: 1s\narticles: [\"003\", \"3\"]\n", "line 3: articles.1"},
		{"unknown article", "name: x\nduration: 1s\narticles: [\"005\"]\n", "000..004"},
		{"forever stage", "name: x\nstages:\n  - {duration: forever, target: 1}\n", "forever is only"},
		{"second document", "name: x\nduration: 1s\n---\nbogus: 1\n", "line 3: more than one YAML document"},
		{"malformed second document", "name: x\nduration: 1s\n---\n[bogus\n", "did not find expected"},
		{"nodes.max_tokens negative", "name: x\nduration: 1s\nnodes: {max_tokens: -1}\n", "line 3: nodes.max_tokens: -1: want 1..16777216"},
		{"mix.max_tokens over the nodes' default bound", "name: x\nduration: 1s\nmix:\n  max_tokens: 40000\n", "line 4: mix.max_tokens: 40000: over the nodes' bound of 32768"},
		{"mix.max_tokens over nodes.max_tokens", "name: x\nduration: 1s\nnodes: {max_tokens: 100}\nmix: {max_tokens: 101}\n", "mix.max_tokens: 101: over the nodes' bound of 100"},
		{"nodes.max_tokens over the ceiling", "name: x\nduration: 1s\nnodes:\n  max_tokens: 16777217\n", "line 4: nodes.max_tokens: 16777217: want 1..16777216"},
		{"fraction in nodes.count", "name: x\nduration: 1s\nnodes: {count: 2.9}\n", "line 3: nodes.count: must be an integer, got the number 2.9"},
		{"fraction in seed", "name: x\nduration: 1s\nseed: 1.5\n", "line 3: seed: must be an integer, got the number 1.5"},
		{"fraction in a range", "name: x\nduration: 1s\nmix:\n  prompt_tokens: {min: 1, max: 9.5}\n", "line 4: mix.prompt_tokens.max: must be an integer"},
		{"fraction in gateway.count", "name: x\nduration: 1s\ngateway:\n  count: 1.5\n", "line 4: gateway.count: must be an integer"},
		{"fraction in redis masters", "name: x\nduration: 1s\nredis: {kind: cluster, masters: 3.5}\n", "line 3: redis.masters: must be an integer, got the number 3.5"},
		{"fraction in gateway config", "name: x\nduration: 1s\ngateway:\n  config: {agent: {queue_size: 64.5}}\n", "agent.queue_size: must be an integer, got the number 64.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExperiment([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestTargetAtRamps(t *testing.T) {
	e := &Experiment{StartRate: 10, Stages: []Stage{
		{Duration: Duration(10 * time.Second), Target: 110},
		{Duration: 0, Target: 500}, // a step
		{Duration: Duration(10 * time.Second), Target: 500},
	}}
	for _, tt := range []struct {
		at   time.Duration
		want float64
		idx  int
	}{
		{0, 10, 0}, {5 * time.Second, 60, 0}, {10 * time.Second, 500, 2},
		{15 * time.Second, 500, 2}, {time.Hour, 500, 3},
	} {
		if got := e.TargetAt(tt.at); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("TargetAt(%v) = %v, want %v", tt.at, got, tt.want)
		}
		if got := e.StageAt(tt.at); got != tt.idx {
			t.Errorf("StageAt(%v) = %v, want %v", tt.at, got, tt.idx)
		}
	}
}

func TestQuickScalesEverything(t *testing.T) {
	e, err := ParseExperiment([]byte(goodExperiment))
	if err != nil {
		t.Fatal(err)
	}
	q := e.Quick()
	if q.Duration.D() != QuickDuration {
		t.Fatalf("quick duration %v", q.Duration)
	}
	f := float64(QuickDuration) / float64(40*time.Second)
	var sum time.Duration
	for _, s := range q.Stages {
		sum += s.Duration.D()
	}
	if sum != QuickDuration {
		t.Errorf("stages sum to %v", sum)
	}
	kill := q.Faults[0]
	if kill.At.D() != time.Duration(20*float64(time.Second)*f) || kill.For.D() != 5*time.Second {
		t.Errorf("fault scaled to at %v for %v", kill.At, kill.For)
	}
	// The spike's own for became the step's (foldOwnFor) and scales with it.
	if spike := q.Faults[1]; spike.For.D() != 4*time.Second || spike.Params["for"] != "0s" {
		t.Errorf("fault for scaled to %v (params.for %v), want 4s (0s)", spike.For, spike.Params["for"])
	}
	if q.Narration[1].At.D() != 10*time.Second {
		t.Errorf("narration at %v", q.Narration[1].At)
	}
	// The original is untouched.
	if e.Duration.D() != 40*time.Second || e.Faults[1].For.D() != 8*time.Second {
		t.Errorf("Quick modified the original")
	}
	// Short and endless experiments are not stretched.
	d := DefaultExperiment()
	if d.Quick().Duration != Forever {
		t.Errorf("forever experiment changed by Quick")
	}
}

func TestDefaultExperimentValid(t *testing.T) {
	e := DefaultExperiment()
	if e.Duration != Forever || e.Nodes.Count != 3 {
		t.Fatalf("default: duration %v nodes %d", e.Duration, e.Nodes.Count)
	}
	for _, d := range Defenses {
		if d != "ratelimit" && !e.Gateway.Defenses[d] {
			t.Errorf("defense %s off in the default lab", d)
		}
	}
}

// Every lesson in experiments/ parses, has narration of each kind and at
// least one threshold.
func TestLessonsParse(t *testing.T) {
	files, err := filepath.Glob("../../experiments/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("want at least 5 lessons, found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			e, err := LoadExperiment(f)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, s := range e.Narration {
				kinds[s.Kind] = true
			}
			for _, k := range []string{"predict", "watch", "explain"} {
				if !kinds[k] {
					t.Errorf("no %s step", k)
				}
			}
			if len(e.Thresholds) == 0 {
				t.Errorf("no thresholds")
			}
			if base := strings.TrimSuffix(filepath.Base(f), ".yaml"); base != e.Name {
				t.Errorf("name %q differs from the file name %q", e.Name, base)
			}
		})
	}
}

func TestLoadExperimentMissingFile(t *testing.T) {
	_, err := LoadExperiment(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("err = %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestExperimentRoutesByPriority(t *testing.T) {
	good := "name: x\nduration: 5s\nstages: [{duration: 5s, target: 10}]\nmix:\n  routes: {chat: 1}\n  routes_by_priority:\n    P0: {predict: 1}\n"
	e, err := ParseExperiment([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Mix.RoutesByPriority["P0"]["predict"]; got != 1 {
		t.Fatalf("routes_by_priority.P0.predict = %v", got)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"    P7: {predict: 1}\n", "mix.routes_by_priority.P7"},
		{"    P0: {teleport: 1}\n", "mix.routes_by_priority.P0.teleport"},
		{"    P0: {predict: 0}\n", "mix.routes_by_priority.P0"},
	} {
		bad := strings.Replace(good, "    P0: {predict: 1}\n", tt.yaml, 1)
		if _, err := ParseExperiment([]byte(bad)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err %v, want one naming %s", tt.yaml, err, tt.want)
		}
	}
}

func TestPredictBlock(t *testing.T) {
	const base = "name: x\nduration: 40s\nnarration:\n"
	good := base + `  - {at: 2s, kind: predict, text: "How many P0 succeed?", predict: {metric: p0_success_rate}}
  - {at: 10s, kind: predict, text: "And goodput after the fault?", predict: {metric: goodput_rps, question: "goodput after?", from: 20s}}
  - {at: 25s, kind: explain, text: "Here it is."}
  - {at: 30s, kind: predict, text: "Timeouts in the end?", predict: {metric: timeout_rate}}
`
	e, err := ParseExperiment([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if q := e.Narration[0].Predict.AskedQuestion(); q != "P0 success %?" {
		t.Errorf("default question %q", q)
	}
	if q := e.Narration[1].Predict.AskedQuestion(); q != "goodput after?" {
		t.Errorf("question %q", q)
	}
	for _, tt := range []struct {
		step, measuredAt int
		from             time.Duration
	}{{0, 2, 2 * time.Second}, {1, 2, 20 * time.Second}, {3, -1, 30 * time.Second}} {
		if got := e.MeasuredAt(tt.step); got != tt.measuredAt {
			t.Errorf("MeasuredAt(%d) = %d, want %d", tt.step, got, tt.measuredAt)
		}
		if got := e.MeasureFrom(tt.step).D(); got != tt.from {
			t.Errorf("MeasureFrom(%d) = %v, want %v", tt.step, got, tt.from)
		}
	}
	// Quick scales from with the rest; Clone copies the block.
	q := e.Quick()
	if got := q.Narration[1].Predict.From.D(); got != 10*time.Second {
		t.Errorf("quick from %v, want 10s", got)
	}
	c := e.Clone()
	c.Narration[0].Predict.Metric = "goodput_rps"
	if e.Narration[0].Predict.Metric != "p0_success_rate" {
		t.Error("Clone shares the predict block")
	}

	for _, tt := range []struct{ name, step, want string }{
		{"unknown metric", `{at: 1s, kind: predict, text: a, predict: {metric: happiness}}`, "line 4: narration.0.predict.metric: \"happiness\": want one of"},
		{"not a predict step", `{at: 1s, kind: watch, text: a, predict: {metric: goodput_rps}}`, "narration.0.predict: only a predict step"},
		{"from after the explain", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, from: 30s}}` + "\n  - {at: 20s, kind: explain, text: b}", "narration.0.predict.from: 30s is after the explain step"},
		{"to before from", `{at: 5s, kind: predict, text: a, predict: {metric: goodput_rps, to: 3s}}`, "narration.0.predict.to: 3s: want a time after the measurement starts"},
		{"to after the explain", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, to: 30s}}` + "\n  - {at: 20s, kind: explain, text: b}", "is after the explain step that shows"},
		{"long question", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, question: "` + strings.Repeat("why ", 20) + `"}}`, "keep it under 60"},
		{"unknown field", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, unit: "%"}}`, "field unit not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExperiment([]byte(base + "  - " + tt.step + "\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestClientRetry(t *testing.T) {
	e, err := ParseExperiment([]byte("name: x\nduration: 1s\nclient_retry: {attempts: 3, on: [timeout, 5xx, 429], backoff: 100ms, max_backoff: 1s, budget: 0.1, budget_min_per_second: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := e.ClientRetry.Policy()
	if p.Attempts != 3 || len(p.On) != 3 || p.Backoff != 100*time.Millisecond || p.MaxBackoff != time.Second || p.Budget != 0.1 || p.BudgetMinPerSecond != 2 {
		t.Errorf("policy %+v", p)
	}
	c := e.Clone()
	c.ClientRetry.On[0] = "error"
	if e.ClientRetry.On[0] != "timeout" {
		t.Error("Clone shares client_retry.on")
	}
	for _, tt := range []struct{ yaml, want string }{
		{"client_retry: {attempts: 20}", "line 3: client_retry.attempts: want 0..10"},
		{"client_retry: {attempts: 2, on: [404]}", "client_retry.on"},
		{"client_retry: {budget: 2}", "client_retry.budget"},
		{"client_retry: {backoff: forever}", "forever is not a backoff"},
		{"client_retry: {tries: 2}", "field tries not found"},
	} {
		if _, err := ParseExperiment([]byte("name: x\nduration: 1s\n" + tt.yaml + "\n")); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// A predict step's window must end within the run, as narration steps
// must show within it: a `to` (or a `from`) after the end is refused,
// naming the step and the run's length. A run that lasts forever is not
// checked.
func TestPredictWindowWithinRun(t *testing.T) {
	for _, tt := range []struct {
		name, head, step string
		want             string // substring of the error; "" when it loads
	}{
		{"to after the end", "duration: 40s", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, to: 41s}}`,
			"line 4: narration.0.predict.to: 41s is after the end of the run (40s): the measurement would never end there"},
		{"to after the stages end", "stages:\n  - {duration: 10s, target: 5}", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, to: 12s}}`,
			"line 5: narration.0.predict.to: 12s is after the end of the run (10s)"},
		{"from after the end", "duration: 40s", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, from: 50s}}`,
			"line 4: narration.0.predict.from: 50s is after the end of the run (40s): the measurement would never start"},
		{"to at the end", "duration: 40s", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, to: 40s}}`, ""},
		{"to before the end", "duration: 40s", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, from: 5s, to: 30s}}`, ""},
		{"forever run", "duration: forever", `{at: 1s, kind: predict, text: a, predict: {metric: goodput_rps, from: 1h, to: 2h}}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExperiment([]byte("name: x\n" + tt.head + "\nnarration:\n  - " + tt.step + "\n"))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}
