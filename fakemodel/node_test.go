package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/levee-lab/levee/internal/wire"
)

const testToken = "test-token-0123456789"

// startNode serves a node with knobs k on a loopback port until the test ends.
func startNode(t testing.TB, k Knobs, opts ...Option) (*Node, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(ln, append([]Option{WithKnobs(k), WithAdminToken(testToken)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve() }()
	t.Cleanup(func() {
		n.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return n, "http://" + n.Addr()
}

func fixedKnobs(ms float64, slots int, overflow string) Knobs {
	k := DefaultKnobs()
	k.Latency.Dist, k.Latency.FixedMs = DistFixed, ms
	k.Slots, k.Overflow = slots, overflow
	return k
}

var testClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0}}

const chatBody = `{"model":"t","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`

// post sends body and returns status and body; err is a transport error.
func post(ctx context.Context, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// waitFor polls cond until it holds or 20 s pass (a generous bound: it
// costs time only when a test fails, and a loaded machine can be slow).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestChatAndPredictShapes(t *testing.T) {
	_, url := startNode(t, fixedKnobs(5, 4, OverflowQueue))
	code, body, err := post(context.Background(), url+"/v1/chat/completions", chatBody)
	if err != nil || code != 200 {
		t.Fatalf("chat: %d %s %v", code, body, err)
	}
	var c Completion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if c.Object != "chat.completion" || c.Model != "t" || len(c.Choices) != 1 || c.Choices[0].Message.Role != "assistant" ||
		c.Choices[0].Message.Content == "" || c.Usage.CompletionTokens != 4 || c.Usage.TotalTokens != c.Usage.PromptTokens+4 {
		t.Fatalf("completion shape: %s", body)
	}
	code, body, err = post(context.Background(), url+"/v1/predict", `{"amount":1}`)
	if err != nil || code != 200 {
		t.Fatalf("predict: %d %s %v", code, body, err)
	}
	var p Prediction
	if err := json.Unmarshal(body, &p); err != nil || p.Score < 0 || p.Score > 1 ||
		(p.Decision != "APPROVE" && p.Decision != "REVIEW" && p.Decision != "DECLINE") {
		t.Fatalf("predict shape: %s %v", body, err)
	}
}

func TestBadRequests(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 4, OverflowQueue))
	tests := []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"malformed", "POST", "/v1/chat/completions", `{"messages":`, 400, ""},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"x"}`, 400, "messages"},
		{"bad role", "POST", "/v1/chat/completions", `{"messages":[{"content":"x"}]}`, 400, "messages[0].role"},
		{"predict array", "POST", "/v1/predict", `[1]`, 400, ""},
		{"get chat", "GET", "/v1/chat/completions", ``, 405, ""},
		{"too large", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", MaxBodyBytes) + `"}]}`, 413, ""},
		{"no route", "GET", "/nope", ``, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, url+tt.path, strings.NewReader(tt.body))
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e wire.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("error body is not JSON: %v", err)
			}
			if resp.StatusCode != tt.code || e.Error.Message == "" || e.Error.Field != tt.field {
				t.Fatalf("got %d %+v, want %d field %q", resp.StatusCode, e, tt.code, tt.field)
			}
		})
	}
	if got := n.Stats().Outcomes[OutcomeBadRequest]; got != 6 {
		t.Fatalf("bad_request count %d, want 6 (404 is not a request)", got)
	}
}

// TestSlotsNeverExceeded is the acceptance test: C slots, 5×C concurrent
// callers, never more than C in service, and every request answered.
func TestSlotsNeverExceeded(t *testing.T) {
	const c, callers, each = 4, 20, 5
	n, url := startNode(t, fixedKnobs(20, c, OverflowQueue))
	var wg sync.WaitGroup
	var maxSeen int
	stop, observed := make(chan struct{}), make(chan struct{})
	go func() { // a second, independent observer: the slot pool's own count
		defer close(observed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			s, _, _ := n.slots.state()
			maxSeen = max(maxSeen, s)
			time.Sleep(time.Millisecond)
		}
	}()
	errs := make(chan error, callers*each)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				code, body, err := post(context.Background(), url+"/v1/chat/completions", chatBody)
				if err != nil || code != 200 {
					errs <- errors.New(string(body))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-observed
	close(errs)
	for err := range errs {
		t.Errorf("request failed: %v", err)
	}
	st := n.Stats()
	if st.MaxInService > c || maxSeen > c {
		t.Fatalf("max in service %d (pool %d), slots %d", st.MaxInService, maxSeen, c)
	}
	if st.MaxInService != c {
		t.Errorf("max in service %d: with %d callers the slots should all have been used", st.MaxInService, callers)
	}
	if st.Outcomes[OutcomeOK] != callers*each {
		t.Fatalf("ok %d, want %d", st.Outcomes[OutcomeOK], callers*each)
	}
}

// fill sends k requests in the background and waits until the node shows
// them in service or queued as expected. It returns a channel of their
// status codes.
func fill(t *testing.T, n *Node, url string, k int, inService, queued int) <-chan int {
	t.Helper()
	codes := make(chan int, k)
	for range k {
		go func() {
			code, _, err := post(context.Background(), url+"/v1/chat/completions", chatBody)
			if err != nil {
				code = -1
			}
			codes <- code
		}()
	}
	waitFor(t, "slots and queue to fill", func() bool {
		s, q, _ := n.slots.state()
		return s == inService && q == queued
	})
	return codes
}

func collect(t *testing.T, codes <-chan int, k int) map[int]int {
	t.Helper()
	got := map[int]int{}
	for range k {
		got[<-codes]++
	}
	return got
}

// TestOverflowReject: beyond the slots a reject node answers 429 with
// Retry-After at once and leaves the requests in service alone. The two
// busy requests hold both slots until the node closes at the test's end (a
// minute's service): they held them 300 ms, and on a loaded machine a slot
// could come free before the last request beyond them was sent, which then
// got 200.
func TestOverflowReject(t *testing.T) {
	n, url := startNode(t, fixedKnobs(60_000, 2, OverflowReject))
	busy := fill(t, n, url, 2, 2, 0)
	for range 3 {
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(chatBody))
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("beyond the slots: %d Retry-After %q, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// The rejections left the requests in service alone: both still hold
	// their slots, neither ended.
	st := n.Stats()
	if st.InService != 2 || st.Outcomes[OutcomeRejected] != 3 || st.Outcomes[OutcomeOK] != 0 || st.Outcomes[OutcomeAborted] != 0 {
		t.Fatalf("after the rejections: in service %d, outcomes %v; want 2 in service, 3 rejected, nothing else", st.InService, st.Outcomes)
	}
	n.Close() // ends the busy requests (unanswered)
	if got := collect(t, busy, 2); got[429] != 0 {
		t.Fatalf("in-service requests answered %v, want no 429", got)
	}
}

func TestOverflowBounded(t *testing.T) {
	k := fixedKnobs(300, 2, OverflowBounded)
	k.QueueSize = 3
	n, url := startNode(t, k)
	busy := fill(t, n, url, 2, 2, 0)
	waiting := fill(t, n, url, 3, 2, 3)
	for range 4 {
		code, _, err := post(context.Background(), url+"/v1/chat/completions", chatBody)
		if err != nil || code != 429 {
			t.Fatalf("queue full: %d %v, want 429", code, err)
		}
	}
	if got := collect(t, busy, 2); got[200] != 2 {
		t.Fatalf("in service: %v", got)
	}
	if got := collect(t, waiting, 3); got[200] != 3 {
		t.Fatalf("queued: %v", got)
	}
	if st := n.Stats(); st.Outcomes[OutcomeRejected] != 4 || st.Outcomes[OutcomeOK] != 5 || st.MaxInService != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestOverflowQueueFIFO: the unbounded queue takes everyone, and waiters
// get the slot in arrival order. Every
// request hangs (holds its slot until its client leaves), so nothing here
// depends on how fast the machine is: the test lets one client go at a time
// and waits for the state that proves who held the slot.
func TestOverflowQueueFIFO(t *testing.T) {
	k := fixedKnobs(1, 1, OverflowQueue)
	k.HangRate = 1
	k.AbortOnDisconnect = false // a queued waiter keeps its place after its client leaves
	n, url := startNode(t, k)
	const waiters = 6
	leave := make([]context.CancelFunc, waiters+1) // [0] holds the slot first
	done := make(chan struct{}, waiters+1)
	for i := range leave {
		ctx, cancel := context.WithCancel(context.Background())
		leave[i] = cancel
		t.Cleanup(cancel)
		go func() {
			_, _, _ = post(ctx, url+"/v1/chat/completions", chatBody)
			done <- struct{}{}
		}()
		waitFor(t, fmt.Sprintf("request %d to hold the slot or queue", i), func() bool {
			s, q, _ := n.slots.state()
			return s == 1 && q == i
		})
	}
	// Only the request in service counts a hang when its client leaves
	// (a queued one that lost its client still waits for its turn). So
	// after client i leaves, i+1 hangs counted prove request i was the
	// one in service: the slot went 0, 1, 2, … in arrival order.
	for i := range leave {
		leave[i]()
		waitFor(t, fmt.Sprintf("request %d (arrival order) to be the one in service", i), func() bool {
			st := n.Stats()
			return st.Outcomes[OutcomeHang] == uint64(i+1) && st.Queued == max(0, waiters-i-1) && st.InService == min(1, waiters-i)
		})
	}
	if st := n.Stats(); st.Outcomes[OutcomeOK] != 0 || st.Outcomes[OutcomeAborted] != 0 {
		t.Fatalf("outcomes %v, want hangs only", st.Outcomes)
	}
	for range leave {
		<-done
	}
}

// TestCongestionCollapse: without abort_on_disconnect a queued request whose
// client gave up is still served later (wasted work); with it, the request
// leaves the queue at once.
func TestCongestionCollapse(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run(map[bool]string{false: "abort off", true: "abort on"}[abort], func(t *testing.T) {
			k := fixedKnobs(150, 1, OverflowQueue)
			k.AbortOnDisconnect = abort
			n, url := startNode(t, k)
			busy := fill(t, n, url, 1, 1, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			if _, _, err := post(ctx, url+"/v1/chat/completions", chatBody); err == nil {
				t.Fatal("the impatient client got an answer")
			}
			<-busy
			waitFor(t, "the abandoned request to end", func() bool { return n.Stats().Outcomes[OutcomeAborted] == 1 })
			st := n.Stats()
			wasted := scrape(t, url)["levee_fakemodel_wasted_seconds_total"]
			if abort {
				if wasted != 0 || st.MaxInService != 1 {
					t.Fatalf("abort on: wasted %.3fs, want 0 (left the queue)", wasted)
				}
			} else if wasted < 0.14 {
				t.Fatalf("abort off: wasted %.3fs, want the full 0.15 s service of the abandoned request", wasted)
			}
			if st.Outcomes[OutcomeOK] != 1 {
				t.Fatalf("outcomes %v", st.Outcomes)
			}
		})
	}
}

// TestAbortInService: with abort on, a request in service stops when its
// client leaves and frees the slot early. The service lasts 10 minutes:
// a slot freed within waitFor's 20 s was freed by the abort.
func TestAbortInService(t *testing.T) {
	const serviceS = 600
	k := fixedKnobs(serviceS*1000, 1, OverflowQueue)
	k.AbortOnDisconnect = true
	n, url := startNode(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := post(ctx, url+"/v1/chat/completions", chatBody); err == nil {
		t.Fatal("got an answer before the 10 min service time")
	}
	waitFor(t, "the slot to free", func() bool { s, _, _ := n.slots.state(); return s == 0 })
	wasted := scrape(t, url)["levee_fakemodel_wasted_seconds_total"]
	if wasted <= 0 || wasted >= serviceS {
		t.Fatalf("wasted %.3f s, want the part served before the client left (of %d s)", wasted, serviceS)
	}
}

func TestErrorsAndHangs(t *testing.T) {
	k := fixedKnobs(5, 2, OverflowQueue)
	k.ErrorRate = 1
	n, url := startNode(t, k)
	code, body, err := post(context.Background(), url+"/v1/chat/completions", chatBody)
	var e wire.ErrorBody
	if err != nil || code != 500 || json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		t.Fatalf("error_rate 1: %d %s %v", code, body, err)
	}
	if _, err := n.PatchKnobs([]byte(`{"error_rate":0,"hang_rate":1}`)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, _, err := post(ctx, url+"/v1/chat/completions", chatBody); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: err %v, want the client's deadline", err)
	}
	waitFor(t, "the hang to be counted and its slot freed", func() bool {
		s, _, _ := n.slots.state()
		return n.Stats().Outcomes[OutcomeHang] == 1 && s == 0
	})
	if st := n.Stats(); st.Outcomes[OutcomeError] != 1 {
		t.Fatalf("outcomes %v", st.Outcomes)
	}
}

// TestStreamProgressive: the first token comes near TTFT and the rest are
// spread at the token rate, not delivered all at the end.
func TestStreamProgressive(t *testing.T) {
	k := fixedKnobs(5, 2, OverflowQueue)
	k.TTFTMs, k.TokensPerS = 100, 20 // 50 ms between tokens
	_, url := startNode(t, k)
	const tokens = 6
	start := time.Now()
	resp, err := testClient.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"max_tokens":6,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %q", resp.StatusCode, ct)
	}
	var arrivals []time.Duration
	var text strings.Builder
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Object != "chat.completion.chunk" || len(c.Choices) != 1 {
			t.Fatalf("bad chunk %q: %v", line, err)
		}
		if c.Choices[0].FinishReason == nil {
			arrivals = append(arrivals, time.Since(start))
			text.WriteString(c.Choices[0].Delta["content"])
		}
	}
	if !done || len(arrivals) != tokens {
		t.Fatalf("done %v, %d token chunks, want %d", done, len(arrivals), tokens)
	}
	if arrivals[0] < 90*time.Millisecond {
		t.Fatalf("first token after %v, before the 100 ms TTFT", arrivals[0])
	}
	// 5 intervals of 50 ms: the tokens must be spread over at least ~200 ms,
	// and no token may come before its schedule.
	if spread := arrivals[tokens-1] - arrivals[0]; spread < 200*time.Millisecond {
		t.Fatalf("tokens spread over %v (arrivals %v): not progressive", spread, arrivals)
	}
	for i, a := range arrivals {
		if due := 100*time.Millisecond + time.Duration(i)*50*time.Millisecond; a < due-10*time.Millisecond {
			t.Fatalf("token %d at %v, due %v", i, a, due)
		}
	}
	if text.Len() == 0 {
		t.Fatal("no content")
	}
}

func TestAdminAPI(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 4, OverflowQueue))
	do := func(method, tok, body string) (int, []byte) {
		req, _ := http.NewRequest(method, url+"/admin/knobs", strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, tok := range []string{"", "wrong"} {
		code, body := do("GET", tok, "")
		var e wire.ErrorBody
		if code != 401 || json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
			t.Fatalf("token %q: %d %s, want 401 JSON", tok, code, body)
		}
	}
	code, body := do("GET", testToken, "")
	var got Knobs
	if code != 200 || json.Unmarshal(body, &got) != nil || got != n.Knobs() {
		t.Fatalf("GET knobs: %d %s", code, body)
	}
	code, body = do("PUT", testToken, `{"slots":9,"latency":{"fixed_ms":7},"ballast_mb":1}`)
	if code != 200 || json.Unmarshal(body, &got) != nil || got.Slots != 9 || got.Latency.FixedMs != 7 || got.BallastMB != 1 {
		t.Fatalf("PUT knobs: %d %s", code, body)
	}
	if _, _, l := n.slots.state(); l != 9 {
		t.Fatalf("slot pool limit %d after PUT slots 9", l)
	}
	if b := n.pressure.Stats().BallastBytes; b != 1<<20 {
		t.Fatalf("ballast %d after PUT ballast_mb 1", b)
	}
	before := n.Knobs()
	code, body = do("PUT", testToken, `{"slots":3,"cpu_hog_duty":5}`)
	var e wire.ErrorBody
	if code != 400 || json.Unmarshal(body, &e) != nil || e.Error.Field != "cpu_hog_duty" || !strings.Contains(e.Error.Message, "0.95") {
		t.Fatalf("bad PUT: %d %s", code, body)
	}
	if n.Knobs() != before {
		t.Fatal("a rejected patch changed some knobs: not atomic")
	}
	for _, bad := range []struct{ patch, field string }{
		{`{"SLOTS":3}`, "SLOTS"},
		{`{"slots":3,"slots":4}`, "slots"},
		{`{"latency":{"Fixed_MS":3}}`, "latency.Fixed_MS"},
	} {
		code, body = do("PUT", testToken, bad.patch)
		if code != 400 || json.Unmarshal(body, &e) != nil || e.Error.Field != bad.field {
			t.Fatalf("PUT %s: %d %s, want 400 naming %s", bad.patch, code, body, bad.field)
		}
	}
	if n.Knobs() != before {
		t.Fatal("a patch with a wrong knob name changed some knobs")
	}
	if m := scrape(t, url)["levee_fakemodel_mean_service_seconds"]; m != 0.007 {
		t.Fatalf("mean service metric %v, want 0.007", m)
	}
}

func TestAdminLoopbackOnly(t *testing.T) {
	n, _ := startNode(t, fixedKnobs(5, 4, OverflowQueue))
	rec := &recorder{header: http.Header{}}
	req, _ := http.NewRequest("GET", "/admin/knobs", nil)
	req.RemoteAddr = "192.0.2.7:5555"
	req.Header.Set("Authorization", "Bearer "+testToken)
	n.Handler().ServeHTTP(rec, req)
	var e wire.ErrorBody
	if rec.code != 403 || json.Unmarshal(rec.body.Bytes(), &e) != nil ||
		e.Error.Code != wire.CodePermissionDenied || e.Error.Type != "permission_error" {
		t.Fatalf("non-loopback admin: %d %s, want 403 code %q type permission_error", rec.code, rec.body.Bytes(), wire.CodePermissionDenied)
	}
	// Token or not (docs/CONTRACTS.md): the peer is refused first.
	for _, auth := range []string{"", "Bearer wrong-token-0123456789"} {
		if code := adminFrom(n, "192.0.2.7:5555", auth); code != 403 {
			t.Errorf("non-loopback admin with Authorization %q: %d, want 403", auth, code)
		}
	}
	// --admin-any lets other peers in, the token still guarding the API.
	anyPeer, _ := startNode(t, fixedKnobs(5, 4, OverflowQueue), WithAdminAny(true))
	for _, tc := range []struct {
		auth string
		want int
	}{{"Bearer " + testToken, 200}, {"Bearer wrong-token-0123456789", 401}, {"", 401}} {
		if code := adminFrom(anyPeer, "192.0.2.7:5555", tc.auth); code != tc.want {
			t.Errorf("--admin-any, non-loopback peer, Authorization %q: %d, want %d", tc.auth, code, tc.want)
		}
	}
}

// adminFrom is GET /admin/knobs on n from peer with Authorization auth
// (none when empty); it returns the status.
func adminFrom(n *Node, peer, auth string) int {
	rec := &recorder{header: http.Header{}, code: 200}
	req, _ := http.NewRequest("GET", "/admin/knobs", nil)
	req.RemoteAddr = peer
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	n.Handler().ServeHTTP(rec, req)
	return rec.code
}

type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(c int)           { r.code = c }

// scrape reads url/metrics and returns each levee_fakemodel series' value
// (summed over labels; histograms by _count).
func scrape(t testing.TB, url string) map[string]float64 {
	t.Helper()
	resp, err := testClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := newParser()
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] += m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name+"_count"] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func newParser() expfmt.TextParser { return expfmt.NewTextParser(model.UTF8Validation) }

func TestMetricsNamesAndLabels(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	if code, _, err := post(context.Background(), url+"/v1/chat/completions", chatBody); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	resp, err := testClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := newParser()
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"levee_fakemodel_requests_total", "levee_fakemodel_in_service", "levee_fakemodel_queued",
		"levee_fakemodel_slots", "levee_fakemodel_service_seconds", "levee_fakemodel_mean_service_seconds",
		"levee_fakemodel_wasted_seconds_total", "go_goroutines", "go_gc_duration_seconds",
	} {
		f, ok := fams[name]
		if !ok {
			t.Errorf("metric %s missing", name)
			continue
		}
		if strings.HasPrefix(name, "levee_") {
			for _, m := range f.GetMetric() {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == "node" && l.GetValue() == n.Addr())
				}
				if !found {
					t.Errorf("%s has no node=%q label", name, n.Addr())
				}
			}
		}
	}
	got := scrape(t, url)
	if got["levee_fakemodel_requests_total"] != 1 || got["levee_fakemodel_slots"] != 3 || got["levee_fakemodel_service_seconds_count"] != 1 {
		t.Fatalf("values %v", got)
	}
}

// TestShutdownDrains: in-flight and queued requests finish during a
// graceful shutdown, /readyz turns 503, new connections are refused.
func TestShutdownDrains(t *testing.T) {
	n, url := startNode(t, fixedKnobs(200, 1, OverflowQueue))
	codes := fill(t, n, url, 3, 1, 2)
	rec := &recorder{header: http.Header{}}
	errc := make(chan error, 1)
	go func() { errc <- n.Shutdown(context.Background()) }()
	waitFor(t, "draining", func() bool {
		rec.code = 0
		n.Handler().ServeHTTP(rec, httptestRequest("/readyz"))
		return rec.code == 503
	})
	if got := collect(t, codes, 3); got[200] != 3 {
		t.Fatalf("drained requests: %v", got)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, _, err := post(context.Background(), url+"/v1/chat/completions", chatBody); err == nil {
		t.Fatal("request accepted after shutdown")
	}
}

func httptestRequest(path string) *http.Request {
	req, _ := http.NewRequest("GET", path, nil)
	req.RemoteAddr = "127.0.0.1:1"
	return req
}

func TestListenConsecutive(t *testing.T) {
	var lns []net.Listener
	var err error
	for range 5 { // a free port may be taken between probe and bind: retry
		probe, perr := net.Listen("tcp", "127.0.0.1:0")
		if perr != nil {
			t.Fatal(perr)
		}
		p := probe.Addr().(*net.TCPAddr).Port
		probe.Close()
		if p+2 > 65535 {
			continue
		}
		if lns, err = Listen("127.0.0.1", p, 3); err == nil {
			for i, ln := range lns {
				if got := ln.Addr().(*net.TCPAddr).Port; got != p+i {
					t.Fatalf("node %d on port %d, want %d", i, got, p+i)
				}
			}
			break
		}
	}
	if lns == nil {
		t.Skipf("no 3 consecutive free ports: %v", err)
	}
	s, err := NewServer(lns, WithAdminToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	ready, ok := wire.ParseReady(s.ReadyLine())
	if !ok || ready.Kind != wire.KindFakeModel || len(ready.Nodes) != 3 || ready.Listen != lns[0].Addr().String() || ready.Admin != ready.Listen {
		t.Fatalf("ready line %s: %+v", s.ReadyLine(), ready)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Second) }()
	for _, a := range ready.Nodes {
		if code, _, err := post(context.Background(), "http://"+a+"/v1/predict", ``); err != nil || code != 200 {
			t.Fatalf("node %s: %d %v", a, code, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("127.0.0.1", 65535, 2); err == nil {
		t.Fatal("Listen past port 65535 succeeded")
	}
	for _, n := range []int{0, 65536, math.MaxInt} { // MaxInt once panicked making its slice
		if _, err := Listen("127.0.0.1", 0, n); err == nil || !strings.Contains(err.Error(), "[1, 65535]") {
			t.Fatalf("Listen of %d nodes: %v; want an error naming [1, 65535]", n, err)
		}
	}
	if _, err := NewServer(nil, WithAdminToken("")); err != nil {
		t.Fatal("NewServer with no listeners should be empty, not fail")
	}
	for _, tok := range []string{"", "short-token"} {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		if _, err := NewServer([]net.Listener{ln}, WithAdminToken(tok)); err == nil {
			t.Fatalf("NewServer with the token %q succeeded", tok)
		}
	}
}
