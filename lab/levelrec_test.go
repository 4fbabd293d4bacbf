package lab

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
)

// forceLevel pins gateway 0's overload level ("" unpins it) through its
// admin API.
func forceLevel(t *testing.T, l *Lab, level string) {
	t.Helper()
	forceGatewayLevel(t, l, 0, level)
}

// forceGatewayLevel pins gateway i's overload level ("" unpins it).
func forceGatewayLevel(t *testing.T, l *Lab, i int, level string) {
	t.Helper()
	body := fmt.Sprintf(`{"level":%q}`, level)
	req, err := http.NewRequest(http.MethodPut, "http://"+l.sup.Gateways()[i].Admin()+wire.PathAdminLevel, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s %s: %s", wire.PathAdminLevel, body, resp.Status)
	}
}

// waitLevel waits for a sample at level (and recording, when rec).
func waitLevel(t *testing.T, ch <-chan runfiles.Sample, level string, rec bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s, ok := <-ch:
			if !ok {
				t.Fatal("samples closed")
			}
			if s.Level == level && !s.GatewayStale && s.Recording == rec {
				return
			}
		case <-deadline:
			t.Fatalf("no sample at level %s (recording %t) in 10 s", level, rec)
		}
	}
}

// quietGateway is the experiment's gateway section with extra (more keys,
// "" for none) and every overload guard watermark at 0 (off): only the
// tests' forced levels change a gateway's level. Under -race on a loaded
// machine a gateway's own lag, scheduler latency and GC pauses crossed the
// default watermarks and added level changes of their own (lag_ms,
// sched_ms, gc_pause_ms) to the ones the tests count.
func quietGateway(extra string) string {
	off := "{yellow: 0, red: 0, black: 0}"
	var guard []string
	for _, w := range []string{"lag_probe_p99_ms", "sched_latency_p99_ms", "gc_pause_p99_ms", "heap_mb",
		"inflight_ratio", "queue_fill", "upstream_latency_ratio", "backpressure_share"} {
		guard = append(guard, w+": "+off)
	}
	if extra != "" {
		extra += ", "
	}
	return "gateway: {" + extra + "guard: {" + strings.Join(guard, ", ") + "}}"
}

// A recording started with r holds the level changes made while it runs,
// not the gateways' history from before it began: the first level change
// it saw made it read every change the gateway had kept, and it wrote the
// green → red → green played before it into its events.jsonl.
func TestRecordingHoldsOnlyItsLevelChanges(t *testing.T) {
	exp := foreverLab(t, "levels", 20, 20, quietGateway(""))
	l := openLab(t, exp, Options{RunsDir: t.TempDir()})
	ch := l.Samples()
	waitLevel(t, ch, "green", false)
	forceLevel(t, l, "red") // before the recording
	waitLevel(t, ch, "red", false)
	forceLevel(t, l, "")
	waitLevel(t, ch, "green", false)

	dir, err := l.StartRecording()
	if err != nil {
		t.Fatal(err)
	}
	waitLevel(t, ch, "green", true)
	forceLevel(t, l, "yellow") // inside it
	waitLevel(t, ch, "yellow", true)
	forceLevel(t, l, "")
	waitLevel(t, ch, "green", true)
	// The reads run off the sampling goroutine: give the last one time to land.
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for time.Now().Before(deadline) {
		got = levelEvents(t, dir)
		if len(got) >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := l.StopRecording(); err != nil {
		t.Fatal(err)
	}
	got = levelEvents(t, dir)
	want := "[green→yellow yellow→green]"
	if fmt.Sprint(got) != want {
		t.Errorf("level events in the recording %v, want %s", got, want)
	}
}

// levelEvents lists the recording's level events as from→to.
func levelEvents(t *testing.T, dir string) []string {
	t.Helper()
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind == runfiles.EventLevel {
			out = append(out, fmt.Sprintf("%v→%v", ev.Fields["from"], ev.Fields["to"]))
		}
	}
	return out
}

// A gateway that restarts (an OOM kill) numbers its level changes from 1
// again: the level log still records them. It kept the old process's last
// sequence number and skipped every change of the new process up to it.
func TestLevelChangesAfterAGatewayRestart(t *testing.T) {
	exp := foreverLab(t, "levels-restart", 20, 20, quietGateway("memory_limit_mb: 128, restart_delay: 300ms"))
	dir := t.TempDir() + "/run"
	l := openLab(t, exp, Options{Record: true, Out: dir})
	ch := l.Samples()
	levelsSeen := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		got := levelEvents(t, dir)
		for len(got) < n && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			got = levelEvents(t, dir)
		}
		return got
	}
	waitLevel(t, ch, "green", true)
	forceLevel(t, l, "red")
	waitLevel(t, ch, "red", true)
	forceLevel(t, l, "")
	waitLevel(t, ch, "green", true)
	if got := levelsSeen(2); len(got) != 2 {
		t.Fatalf("level events before the restart %v", got)
	}

	gw := l.sup.Gateways()[0]
	// The kill may come before the answer (EOF): the restart below is what counts.
	if err := l.PatchGatewayPressure(context.Background(), map[string]any{"ballast_mb": 400}); err != nil {
		t.Logf("ballast: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for gw.Starts() < 2 || !gw.Up() {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway was not OOM-killed and restarted (starts %d)", gw.Starts())
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitLevel(t, ch, "green", true)
	forceLevel(t, l, "yellow")
	waitLevel(t, ch, "yellow", true)
	forceLevel(t, l, "")
	waitLevel(t, ch, "green", true)
	got := levelsSeen(4)
	if want := "[green→red red→green green→yellow yellow→green]"; fmt.Sprint(got) != want {
		t.Errorf("level events %v, want %s", got, want)
	}
}

// Each gateway's level change lands in the recording, also when the
// samples' level — the worst gateway's — does not change with it: the log
// read the gateways only on a change of that level, so with gateway-0 at
// red, gateway-1's green → yellow → green never reached events.jsonl.
func TestEveryGatewaysLevelChangesRecorded(t *testing.T) {
	exp := foreverLab(t, "levels-two", 20, 20, quietGateway("count: 2"))
	dir := t.TempDir() + "/run"
	l := openLab(t, exp, Options{Record: true, Out: dir})
	ch := l.Samples()
	waitLevel(t, ch, "green", true)
	forceGatewayLevel(t, l, 0, "red")
	waitLevel(t, ch, "red", true)
	deadline := time.Now().Add(5 * time.Second)
	for len(levelEvents(t, dir)) < 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	forceGatewayLevel(t, l, 1, "yellow")
	forceGatewayLevel(t, l, 1, "")
	waitLevel(t, ch, "red", true) // gateway-0 still red
	if err := l.StopRecording(); err != nil {
		t.Fatal(err)
	}
	got := levelEvents(t, dir)
	if want := "[green→red green→yellow yellow→green]"; fmt.Sprint(got) != want {
		t.Errorf("level events %v, want %s", got, want)
	}
}
