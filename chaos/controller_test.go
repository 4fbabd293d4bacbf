package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestControllerToggle(t *testing.T) {
	env := newFakeEnv(3)
	var mu sync.Mutex
	var events []Event
	ctl := NewController(Default, env, WithObserver(func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	ctx := context.Background()
	on, err := ctl.Toggle(ctx, "model_latency")
	if err != nil || !on {
		t.Fatalf("Toggle on: %v %v", on, err)
	}
	if got := ctl.Active(); len(got) != 1 || got[0].Name != "model_latency" || got[0].Detail != "×3 all nodes" {
		t.Errorf("Active = %+v", got)
	}
	if env.knobs[1]["latency_multiplier"] != 3.0 {
		t.Errorf("knobs %v", env.knobs[1])
	}
	on, err = ctl.Toggle(ctx, "model_latency")
	if err != nil || on {
		t.Fatalf("Toggle off: %v %v", on, err)
	}
	if len(ctl.Active()) != 0 || env.pristine() != "" {
		t.Errorf("after toggling off: %v, %s", ctl.Active(), env.pristine())
	}
	if _, err := ctl.Toggle(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "unknown fault") {
		t.Errorf("unknown: %v", err)
	}
	if len(events) != 2 || events[0].Action != "apply" || events[1].Action != "revert" || events[0].Fault != "model_latency" {
		t.Errorf("events %+v", events)
	}
}

func TestControllerConfigureAndApply(t *testing.T) {
	env := newFakeEnv(2)
	ctl := NewController(Default, env)
	ctx := context.Background()
	if err := ctl.Configure("model_latency", json.RawMessage(`{"multiplier":5}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Toggle(ctx, "model_latency"); err != nil {
		t.Fatal(err)
	}
	if env.knobs[0]["latency_multiplier"] != 5.0 {
		t.Errorf("configured multiplier not used: %v", env.knobs[0])
	}
	if err := ctl.Configure("model_latency", json.RawMessage(`{"multiplier":6}`)); err == nil {
		t.Error("Configure of an active fault accepted")
	}
	if err := ctl.Configure("model_latency", json.RawMessage(`{"multiplier":-6}`)); err == nil {
		t.Error("bad parameters accepted")
	}
	// Apply without params: already active, nothing happens.
	n := env.callCount()
	if err := ctl.Apply(ctx, "model_latency", nil); err != nil || env.callCount() != n {
		t.Errorf("Apply of an active fault: %v, %d calls", err, env.callCount()-n)
	}
	// Apply with new params: revert, then apply the new ones.
	if err := ctl.Apply(ctx, "model_latency", json.RawMessage(`{"multiplier":2,"node":1}`)); err != nil {
		t.Fatal(err)
	}
	if env.knobs[0]["latency_multiplier"] != 1.0 || env.knobs[1]["latency_multiplier"] != 2.0 {
		t.Errorf("knobs after re-apply: %v %v", env.knobs[0], env.knobs[1])
	}
	if err := ctl.Apply(ctx, "cpu_hog", json.RawMessage(`{"duty":7}`)); err == nil {
		t.Error("Apply with bad params accepted")
	}
	cat := ctl.Catalogue()
	if len(cat) != len(catalogue) || cat[1].Name != "model_latency" || !cat[1].Active || cat[0].Active {
		t.Errorf("Catalogue %+v", cat)
	}
	if err := ctl.Revert(ctx, "model_latency"); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Revert(ctx, "model_latency"); err != nil {
		t.Errorf("second Revert: %v", err)
	}
	if env.pristine() != "" {
		t.Error(env.pristine())
	}
}

// RevertAll brings killed nodes back before restoring knobs on them.
func TestRevertAllOrder(t *testing.T) {
	env := newFakeEnv(2)
	ctl := NewController(Default, env)
	ctx := context.Background()
	for _, name := range []string{"model_slots", "gc_pressure", "slow_clients", "redis_outage"} {
		if err := ctl.Apply(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ctl.Apply(ctx, "node_kill", json.RawMessage(`{"node":0,"for":"0s"}`)); err != nil {
		t.Fatal(err)
	}
	if err := ctl.RevertAll(ctx); err != nil {
		t.Fatalf("RevertAll: %v", err)
	}
	if len(ctl.Active()) != 0 || env.pristine() != "" {
		t.Errorf("after RevertAll: %v, %s", ctl.Active(), env.pristine())
	}
}

// Toggling every fault 1,000 times from several goroutines, while timed
// faults expire on their own and readers poll, leaves the env exactly as it
// was once everything is reverted. Run under -race.
func TestToggleRace(t *testing.T) {
	env := newFakeEnv(3)
	ctl := NewController(Default, env)
	// Short durations so expiries race with the toggles.
	for name, p := range map[string]string{
		"node_kill":         `{"node":1,"for":"1ms"}`,
		"traffic_spike":     `{"factor":2,"for":"1ms"}`,
		"redis_outage":      `{"for":"2ms"}`,
		"redis_master_kill": `{"for":"1ms"}`,
	} {
		if err := ctl.Configure(name, json.RawMessage(p)); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines, perFault = 4, 1000
	ctx := context.Background()
	var wg sync.WaitGroup
	var toggles, failures atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { // a dashboard polling the catalogue
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = ctl.Active()
				_ = ctl.Catalogue()
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	for _, name := range Default.Names() {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perFault / goroutines {
					if _, err := ctl.Toggle(ctx, name); err != nil {
						failures.Add(1) // e.g. patching a node that node_kill has down
					}
					toggles.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if err := ctl.RevertAll(ctx); err != nil {
		t.Fatalf("RevertAll: %v", err)
	}
	env.afterWG.Wait() // expiries still pending are stale by now and must do nothing
	if a := ctl.Active(); len(a) != 0 {
		t.Errorf("still active: %+v", a)
	}
	if d := env.pristine(); d != "" {
		t.Errorf("env not back to its original state: %s", d)
	}
	t.Logf("%d toggles, %d failed (expected: knob patches on a killed node)", toggles.Load(), failures.Load())
	if toggles.Load() != int64(perFault*len(Default.Names())) {
		t.Errorf("toggles %d", toggles.Load())
	}
}

func TestTimelineRun(t *testing.T) {
	env := newFakeEnv(2)
	var mu sync.Mutex
	var got []string
	ctl := NewController(Default, env, WithObserver(func(e Event) {
		mu.Lock()
		got = append(got, e.Action+" "+e.Fault)
		mu.Unlock()
	}))
	tl := Timeline{
		{At: 60 * time.Millisecond, Fault: "traffic_spike", Params: json.RawMessage(`{"factor":2,"for":"0s"}`)},
		{At: 0, Fault: "model_latency", For: 40 * time.Millisecond},
		{At: 20 * time.Millisecond, Fault: "cpu_hog"},
	}
	if err := tl.Validate(Default); err != nil {
		t.Fatal(err)
	}
	clk := clockwork.NewFakeClock()
	done := make(chan error, 1)
	go func() { done <- tl.Run(context.Background(), ctl, clk) }()
	// Step the clock from one due time to the next; Run waits on one timer.
	events := func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprint(got) }
	for _, want := range []string{
		"[apply model_latency]",
		"[apply model_latency apply cpu_hog]",
		"[apply model_latency apply cpu_hog revert model_latency]",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := clk.BlockUntilContext(ctx, 1); err != nil {
			t.Fatalf("Run never waited for its next step (events %s)", events())
		}
		cancel()
		if g := events(); g != want {
			t.Fatalf("events %s, want %s", g, want)
		}
		clk.Advance(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"apply model_latency", "apply cpu_hog", "revert model_latency", "apply traffic_spike"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
	act := ctl.Active()
	if len(act) != 2 || act[0].Name != "cpu_hog" || act[1].Name != "traffic_spike" {
		t.Errorf("active %+v", act)
	}
	if env.rateFactor != 2 {
		t.Errorf("rate factor %v", env.rateFactor)
	}
	_ = ctl.RevertAll(context.Background())
	if env.pristine() != "" {
		t.Error(env.pristine())
	}
}

// The Player hands out each action once, in time order (reverts first at
// equal times), as the caller's clock passes them.
func TestPlayerOrder(t *testing.T) {
	tl := Timeline{
		{At: 2 * time.Second, Fault: "cpu_hog", For: time.Second},
		{At: time.Second, Fault: "model_latency", For: 2 * time.Second},
		{At: 3 * time.Second, Fault: "cpu_hog"},
	}
	p := tl.Play(Default)
	var got []string
	for _, now := range []time.Duration{0, time.Second, 1500 * time.Millisecond, 3 * time.Second, time.Hour} {
		for _, a := range p.Due(now) {
			verb := "apply"
			if a.Revert {
				verb = "revert"
			}
			got = append(got, fmt.Sprintf("%v %s %s #%d", now, verb, a.Fault, a.Step))
		}
	}
	want := []string{"1s apply model_latency #1", "3s apply cpu_hog #0", "3s revert cpu_hog #0", "3s revert model_latency #1", "3s apply cpu_hog #2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("actions\n%q\nwant\n%q", got, want)
	}
	if _, ok := p.Next(); ok {
		t.Error("Next after every action was handed out")
	}
}

// TestPlayerSupersededRevert: a later step of a fault replaces the
// earlier step's instance, so the earlier step's revert is dropped and the
// later one lasts its own time (it used to end at the earlier one's).
func TestPlayerSupersededRevert(t *testing.T) {
	for _, tc := range []struct {
		name string
		tl   Timeline
		want []string
	}{
		{"a later step without for", Timeline{
			{At: 0, Fault: "model_slots", For: time.Second},
			{At: 500 * time.Millisecond, Fault: "model_slots"},
		}, []string{"apply model_slots #0", "apply model_slots #1"}},
		{"a later step ending first", Timeline{
			{At: 0, Fault: "model_slots", For: 3 * time.Second},
			{At: time.Second, Fault: "model_slots", For: time.Second},
		}, []string{"apply model_slots #0", "apply model_slots #1", "revert model_slots #1"}},
		{"a step after the revert is its own", Timeline{
			{At: 0, Fault: "model_slots", For: time.Second},
			{At: 2 * time.Second, Fault: "model_slots", For: time.Second},
		}, []string{"apply model_slots #0", "revert model_slots #0", "apply model_slots #1", "revert model_slots #1"}},
		{"other faults are untouched", Timeline{
			{At: 0, Fault: "model_slots", For: time.Second},
			{At: 500 * time.Millisecond, Fault: "cpu_hog", For: time.Second},
		}, []string{"apply model_slots #0", "apply cpu_hog #1", "revert model_slots #0", "revert cpu_hog #1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.tl.Play(Default)
			var got []string
			for _, now := range []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second, time.Hour} {
				for _, a := range p.Due(now) {
					verb := "apply"
					if a.Revert {
						verb = "revert"
					}
					got = append(got, fmt.Sprintf("%s %s #%d", verb, a.Fault, a.Step))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("actions\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// A step with its own For reverts its fault on the timeline's clock: a
// fault that also takes a "for" parameter gets "for": "0s" unless the step
// set one.
func TestActionParams(t *testing.T) {
	tests := []struct {
		step Step
		want string
	}{
		{Step{Fault: "node_kill", Params: json.RawMessage(`{"node":1}`), For: time.Second}, `{"for":"0s","node":1}`},
		{Step{Fault: "node_kill", Params: json.RawMessage(`{"node":1,"for":"3s"}`), For: time.Second}, `{"node":1,"for":"3s"}`},
		{Step{Fault: "node_kill", Params: json.RawMessage(`{"node":1}`)}, `{"node":1}`},
		{Step{Fault: "model_latency", Params: json.RawMessage(`{"multiplier":2}`), For: time.Second}, `{"multiplier":2}`},
		{Step{Fault: "traffic_spike", For: time.Second}, `{"for":"0s"}`},
		{Step{Fault: "cpu_hog"}, ``},
	}
	for _, tt := range tests {
		a := Timeline{tt.step}.Play(Default).Due(time.Hour)
		if len(a) == 0 || string(a[0].Params) != tt.want || a[0].For != tt.step.For {
			t.Errorf("%+v: %+v, want params %s", tt.step, a, tt.want)
		}
	}
}

func TestEffect(t *testing.T) {
	for _, name := range Default.Names() {
		want := EffectNone
		if name == "node_kill" {
			want = EffectNodeLoss
		}
		if got := Default.Effect(name); got != want {
			t.Errorf("%s: effect %q, want %q", name, got, want)
		}
	}
	if Default.Effect("nope") != EffectNone {
		t.Error("unknown fault has an effect")
	}
}

// Active and Detail answer at once while an Apply is under way (a node
// restart can take seconds), so a dashboard reading the catalogue never
// waits for a fault.
func TestReadersDoNotWaitForApply(t *testing.T) {
	env := newFakeEnv(1)
	f := NewNodeKill()
	f.For = 0
	if err := f.Apply(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock() // as a Revert waiting for the node to restart does
	defer f.mu.Unlock()
	done := make(chan struct{})
	go func() { _ = f.Active(); _ = f.Detail(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Active/Detail blocked on an apply in progress")
	}
}

func TestTimelineErrorsAndCancel(t *testing.T) {
	env := newFakeEnv(1)
	ctl := NewController(Default, env)
	bad := Timeline{{Fault: "nope"}}
	if err := bad.Validate(Default); err == nil || !strings.Contains(err.Error(), "step 0") {
		t.Errorf("Validate: %v", err)
	}
	if err := (Timeline{{At: -1, Fault: "cpu_hog"}}).Validate(Default); err == nil {
		t.Error("negative at accepted")
	}
	// A failing step does not stop the others.
	tl := Timeline{{Fault: "model_latency", Params: json.RawMessage(`{"node":3}`)}, {Fault: "cpu_hog"}}
	err := tl.Run(context.Background(), ctl, clockwork.NewRealClock())
	if err == nil || !strings.Contains(err.Error(), "step 0") {
		t.Errorf("Run error %v should name step 0", err)
	}
	if a := ctl.Active(); len(a) != 1 || a[0].Name != "cpu_hog" {
		t.Errorf("active %+v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	clk := clockwork.NewFakeClock()
	done := make(chan error, 1)
	go func() { done <- Timeline{{At: time.Hour, Fault: "slow_clients"}}.Run(ctx, ctl, clk) }()
	if err := clk.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Run: %v", err)
	}
	if len(ctl.Active()) != 1 {
		t.Errorf("a cancelled timeline applied its step: %+v", ctl.Active())
	}
}

func TestTimelineScaled(t *testing.T) {
	tl := Timeline{
		{At: 10 * time.Second, Fault: "node_kill", Params: json.RawMessage(`{"node":1,"for":"20s"}`), For: 30 * time.Second},
		{At: 4 * time.Second, Fault: "cpu_hog"},
	}
	s, err := tl.Scaled(0.1)
	if err != nil {
		t.Fatal(err)
	}
	if s[0].At != time.Second || s[0].For != 3*time.Second || s[1].At != 400*time.Millisecond {
		t.Errorf("scaled %+v", s)
	}
	f, err := Default.New("node_kill", s[0].Params)
	if err != nil {
		t.Fatal(err)
	}
	if k := f.(*NodeKill); k.For.D() != 2*time.Second || !slices.Equal(k.Node, Nodes(1)) {
		t.Errorf("scaled params %+v", k)
	}
	if tl[0].At != 10*time.Second || !strings.Contains(string(tl[0].Params), "20s") {
		t.Error("Scaled modified its receiver")
	}
	if _, err := tl.Scaled(0); err == nil {
		t.Error("factor 0 accepted")
	}
	if _, err := (Timeline{{Fault: "node_kill", Params: json.RawMessage(`{"for":5}`)}}).Scaled(0.5); err == nil {
		t.Error("numeric for accepted")
	}
}

// TestControllerReportsExpiry: a fault that ends on its own duration
// (node_kill's for, as the dashboard's key applies it) is reported as a
// revert, so a recording closes the fault's window when the node came
// back; a timer that finds the fault already reverted reports nothing.
func TestControllerReportsExpiry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		revertFirst bool
		wantActions []string
	}{
		{"expires", false, []string{"apply", "revert"}},
		{"reverted before", true, []string{"apply", "revert"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv(2)
			env.manualAfter = true
			var mu sync.Mutex
			var actions []string
			ctl := NewController(Default, env, WithObserver(func(e Event) {
				mu.Lock()
				actions = append(actions, e.Action)
				mu.Unlock()
			}))
			ctx := context.Background()
			if err := ctl.Apply(ctx, "node_kill", []byte(`{"node":1,"for":"10s"}`)); err != nil {
				t.Fatal(err)
			}
			if tc.revertFirst {
				if err := ctl.Revert(ctx, "node_kill"); err != nil {
					t.Fatal(err)
				}
			}
			env.fire() // the fault's own 10 s run out
			if len(ctl.Active()) != 0 || !env.up[1] {
				t.Fatalf("after the fault's time: active %v, node up %v", ctl.Active(), env.up[1])
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(actions, tc.wantActions) {
				t.Errorf("observed %v, want %v", actions, tc.wantActions)
			}
		})
	}
}
