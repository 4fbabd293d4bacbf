package gateway

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
)

// TestOverloadAccounting is the acceptance test: the real gateway
// over loopback in front of an upstream of C slots and fixed latency,
// offered 10× its capacity open loop for 3 s with P0 at half of capacity.
// P0 must succeed (≥ 99.9 %), every offered request must end in exactly
// one outcome, the gateway's counters must equal what the client saw, and
// the goroutines must return to their baseline.
//
// Client, gateway and upstream share this process on a shared 2-core
// machine that may be loaded, so nothing judged here may hang on wall
// clock: the offered rate is modest in CPU (capacity 20 req/s, offered
// 200 req/s under -race); the service time (1 s) dwarfs the delays of a
// process waiting for a core, so the capacity P0 relies on holds; and
// every timeout that could fail P0 or lose an answer when the process
// waits for a core (client timeout, deadline, queue timeout, health
// checks, dials) is far longer than the run. What sheds is the bounded
// queue and the overload levels, not timers.
func TestOverloadAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s of load")
	}
	const (
		slots    = 20
		latency  = time.Second                      // long beside the CPU delays of a starved process
		capacity = slots * int(time.Second/latency) // 20 req/s
		rate     = 10 * capacity                    // 200 req/s offered
		duration = 3 * time.Second
		p0Every  = 20 // P0 = rate/20 = 10 req/s = 50 % of capacity
		queue    = 2 * slots
		patient  = time.Minute // every timeout: far longer than the run
	)
	baseline := runtime.NumGoroutine()

	fm := newFakeModel(t, slots, latency)
	cfg := testConfig(fm.addr())
	cfg.Classes.AI = staticClass(slots, 1, 64, queue, patient)
	cfg.Routes.Predict.Timeout = patient
	cfg.ReadHeaderTimeout = patient
	// One health round at start, none during the run: a check that times
	// out on a starved process would take the (healthy) node out.
	cfg.Upstream.HealthInterval = time.Hour
	cfg.Upstream.DialTimeout = patient
	// The backend here is healthy, the test is about overload: stalls of a
	// shared machine must not push the latency ratio to black (fallbacks
	// only).
	cfg.Guard.UpstreamLatencyRatio.Black = 0
	s, err := Start(context.Background(), cfg, testToken)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 1024}
	client := &http.Client{Transport: tr, Timeout: 2 * patient} // the gateway answers first

	prioKey := func(i int) (admit.Priority, string) {
		switch {
		case i%p0Every == 0:
			return admit.P0, "k0"
		case i%p0Every <= 6:
			return admit.P1, "k1"
		}
		return admit.P2, "k2"
	}
	var mu sync.Mutex
	seen := map[admit.Priority]map[string]int{admit.P0: {}, admit.P1: {}, admit.P2: {}}
	var wg sync.WaitGroup
	n := int(float64(rate) * duration.Seconds())
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		p, key := prioKey(i)
		wg.Go(func() {
			o := sendPredict(client, "http://"+s.Addr()+"/v1/predict", key, patient)
			mu.Lock()
			seen[p][o]++
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	total := 0
	clientOutcome := map[string]int{}
	for p, m := range seen {
		for o, c := range m {
			total += c
			clientOutcome[o] += c
			_ = p
		}
	}
	t.Logf("offered %d in %v (%.0f req/s, capacity %d req/s): %v", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), capacity, clientOutcome)
	for _, p := range []admit.Priority{admit.P0, admit.P1, admit.P2} {
		t.Logf("%s: %v", p, seen[p])
	}
	if total != n {
		t.Errorf("outcomes sum to %d, offered %d", total, n)
	}
	p0 := 0
	for _, c := range seen[admit.P0] {
		p0 += c
	}
	if ok := seen[admit.P0]["ok"]; float64(ok) < 0.999*float64(p0) {
		t.Errorf("P0 success %d/%d < 99.9%%: %v", ok, p0, seen[admit.P0])
	}
	sheds := 0
	for o, c := range clientOutcome {
		if strings.HasPrefix(o, "shed_") {
			sheds += c
		}
	}
	// The bulkhead holds whatever the machine's speed: the upstream (whose
	// own queue is unbounded) never sees more than the limit at once.
	if m := fm.maxInfl.Load(); m > slots {
		t.Errorf("upstream saw %d requests at once, the bulkhead allows %d", m, slots)
	}
	// Did the run overload? A request holds a slot for at least the
	// latency, so at most slots × (elapsed/latency + 1) could be served.
	// A machine too busy to offer twice that cannot show the shedding.
	servable := slots * (int(elapsed/latency) + 1)
	overloaded := n >= 2*servable
	if overloaded && sheds < n/2 {
		t.Errorf("only %d of %d requests shed at 10× capacity", sheds, n)
	}

	// The gateway's own counters tell the same story.
	fams := scrape(t, s)
	for _, r := range []string{wire.FallbackBlack, wire.FallbackUpstream} {
		if n := counterSum(fams, "levee_fallbacks_total", map[string]string{"reason": r}); n > 0 {
			t.Logf("fallbacks for %s: %v (guard %+v, retries %+v)", r, n, s.G.guard.Snapshot(), s.G.pool.Counters())
		}
	}
	for p, m := range seen {
		for o := range wire.NumServerOutcomes {
			got := counterSum(fams, "levee_requests_total", map[string]string{"route": "predict", "priority": p.String(), "outcome": o.String()})
			if int(got) != m[o.String()] {
				t.Errorf("levee_requests_total{priority=%s,outcome=%s} = %v, client saw %d", p, o, got, m[o.String()])
			}
		}
	}
	for r := range wire.NumShedReasons {
		got := counterSum(fams, "levee_shed_total", map[string]string{"reason": r.String()})
		if want := clientOutcome[r.Outcome().String()]; int(got) != want {
			t.Errorf("levee_shed_total{reason=%s} = %v, client saw %d", r, got, want)
		}
	}
	// Every request the chain let through is counted once when admitted:
	// all but the sheds and the black level's fallbacks (no timer fires in
	// this run, so no request left the queue by its deadline).
	black := int(counterSum(fams, "levee_fallbacks_total", map[string]string{"reason": wire.FallbackBlack}))
	if got, want := int(counterSum(fams, wire.MetricAdmitted, map[string]string{"class": "ai"})), total-sheds-black; got != want {
		t.Errorf("levee_admitted_total{class=ai} = %d, want %d (offered %d − shed %d − black fallbacks %d)", got, want, total, sheds, black)
	}

	// Everything stops: back to the baseline of goroutines.
	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), patient)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	fm.srv.Close()
	testClient.CloseIdleConnections()
	deadline := time.Now().Add(patient) // waiting for a state: only a leak takes this long
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > baseline {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the test, baseline %d:\n%s", g, baseline, buf[:runtime.Stack(buf, true)])
	}
	if !overloaded {
		// P0 and the accounting were checked, but not under overload.
		t.Skipf("inconclusive: this machine offered only %.0f req/s (of %d) in %v, under twice what the upstream could serve; P0 and accounting held", float64(n)/elapsed.Seconds(), rate, elapsed.Round(time.Millisecond))
	}
}

// sendOnce sends one predict call with a 2 s deadline and classifies it as
// the lab's client does: by X-Levee-Outcome, else by status; no answer is
// an error.
func sendOnce(c *http.Client, url, key string) string {
	return sendPredict(c, url, key, 2*time.Second)
}

// sendPredict is sendOnce with the given deadline.
func sendPredict(c *http.Client, url, key string, deadline time.Duration) string {
	req, _ := http.NewRequest("POST", url, strings.NewReader(predictBody))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set(wire.HeaderDeadlineMs, strconv.FormatInt(deadline.Milliseconds(), 10))
	resp, err := c.Do(req)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "error"
	}
	if o := resp.Header.Get(wire.HeaderOutcome); o != "" {
		return o
	}
	switch {
	case resp.StatusCode == 200:
		return "ok"
	case resp.StatusCode == 504:
		return "timeout"
	}
	return "error"
}
