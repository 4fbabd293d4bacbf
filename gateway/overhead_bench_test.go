//go:build unix

package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/wire"
)

// The per-request and per-chunk cost of the gateway on OpenAI-shaped
// workloads, over real loopback HTTP, beside a bare httputil.ReverseProxy
// with the pool's tuned transport in front of the same backend: each
// workload is a benchmark with the sub-benchmarks gateway and proxy, to be
// read as ratios within one run (scripts/bench.sh prints them). One client
// sends one request at a time, so ns/op is a request's round trip and
// B/op and allocs/op are the whole process's (client, hop, backend) per
// request: the two sub-benchmarks differ by the hop alone. cpu-ns/op is
// the process's CPU time per request (all three parts), steadier than
// ns/op on a loaded machine.

// overheadChatRequest is a chat request of the usual shape: a system
// prompt, a question, a model, max_tokens.
var overheadChatRequest = `{"model":"llama-3.1-8b-instruct","messages":[` +
	`{"role":"system","content":"You are a helpful assistant. Answer briefly and cite the documents you were given when you use them."},` +
	`{"role":"user","content":"` + strings.Repeat("What limits the throughput of a model server under load? ", 8) + `"}],` +
	`"max_tokens":256,"temperature":0.2`

// overheadChatAnswer is a small non-streamed chat answer with usage.
const overheadChatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"llama-3.1-8b-instruct",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Slots, queueing and the length of the answers."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":120,"completion_tokens":12,"total_tokens":132}}`

// overheadStreamChunks is the chunks of the streamed answer: one token,
// one SSE event each.
const overheadStreamChunks = 1000

// overheadBackend is a loopback OpenAI-compatible backend whose answers
// are made once: chat (small, streamed in overheadStreamChunks events, or
// 1 MB when the model is "big"), embeddings (many vectors) and idle
// streams (one event, then nothing until release is closed).
type overheadBackend struct {
	srv        *httptest.Server
	chat, big  []byte
	stream     []byte // the whole SSE answer
	embeddings []byte
	release    chan struct{}
	mu         sync.Mutex
}

func newOverheadBackend(tb testing.TB) *overheadBackend {
	be := &overheadBackend{chat: []byte(overheadChatAnswer), release: make(chan struct{})}
	content := strings.Repeat("All work and no play makes a model server dull. ", (1<<20)/49)
	be.big = fmt.Appendf(nil, `{"id":"chatcmpl-2","object":"chat.completion","created":1700000000,"model":"big","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"length"}],"usage":{"prompt_tokens":120,"completion_tokens":262144,"total_tokens":262264}}`, content)
	var sb bytes.Buffer
	for i := range overheadStreamChunks {
		fmt.Fprintf(&sb, "data: {\"id\":\"chatcmpl-3\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%d\"},\"finish_reason\":null}]}\n\n", i)
	}
	sb.WriteString("data: {\"id\":\"chatcmpl-3\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":1000,\"total_tokens\":1120}}\n\ndata: [DONE]\n\n")
	be.stream = sb.Bytes()
	// 128 vectors of 1,536 floats: about 2.6 MB of JSON, as a batch of
	// an indexer's.
	var eb bytes.Buffer
	eb.WriteString(`{"object":"list","data":[`)
	for i := range 128 {
		if i > 0 {
			eb.WriteByte(',')
		}
		fmt.Fprintf(&eb, `{"object":"embedding","index":%d,"embedding":[`, i)
		for j := range 1536 {
			if j > 0 {
				eb.WriteByte(',')
			}
			fmt.Fprintf(&eb, "%.8f", float64((i*1536+j)%997)/997-0.5)
		}
		eb.WriteString("]}")
	}
	eb.WriteString(`],"model":"text-embedding-3-small","usage":{"prompt_tokens":1024,"total_tokens":1024}}`)
	be.embeddings = eb.Bytes()
	be.srv = httptest.NewServer(http.HandlerFunc(be.serve))
	tb.Cleanup(be.srv.Close)
	return be
}

func (be *overheadBackend) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.URL.Path == wire.PathHealthz:
		return
	case r.URL.Path == wire.PathEmbeddings:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(be.embeddings)
	case bytes.Contains(body, []byte(`"model":"idle"`)):
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
		w.(http.Flusher).Flush()
		be.mu.Lock()
		release := be.release
		be.mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	case bytes.Contains(body, []byte(`"stream":true`)):
		w.Header().Set("Content-Type", "text/event-stream")
		// One write and one flush per event, as a model server sends
		// tokens.
		for ev := be.stream; len(ev) > 0; {
			i := bytes.Index(ev, []byte("\n\n")) + 2
			_, _ = w.Write(ev[:i])
			w.(http.Flusher).Flush()
			ev = ev[i:]
		}
	case bytes.Contains(body, []byte(`"model":"big"`)):
		// With its length, as vLLM's answers come; the embeddings come
		// chunked.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(be.big)))
		_, _ = w.Write(be.big)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(be.chat)
	}
}

// overheadHops starts the gateway (every defense on, limits generous
// enough never to shed) and a bare reverse proxy in front of be, and
// returns their base URLs.
func overheadHops(tb testing.TB, be *overheadBackend) (gw, proxy string) {
	cfg := testConfig(strings.TrimPrefix(be.srv.URL, "http://"))
	cfg.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: 1e9, Burst: 1e9}, Cost: CostRequests}}
	cfg.Classes.AI = staticClass(1024, 1, 1024, 1024, time.Second)
	cfg.TokenBudget = 1 << 40
	cfg.Budget.MaxRequestTokens = 1 << 30
	cfg.BodyLimitBytes = 4 << 20
	s := startServer(tb, cfg)
	u, _ := url.Parse(be.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	// A bare ReverseProxy cuts a long answer now and then: once the
	// answer's headers are written, net/http closes the inbound body,
	// and the transport's read past the declared length then fails and
	// tears down the connection to the backend (golang/go#40747). The
	// body is forwarded through a reader that ends at its length.
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		if r.ContentLength > 0 {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(r.Body, r.ContentLength), r.Body}
		}
	}
	rp.Transport = upstream.NewTransport(upstream.Config{Nodes: []string{be.srv.URL}, MaxIdleConnsPerHost: cfg.Upstream.MaxIdleConnsPerHost})
	p := httptest.NewServer(rp)
	tb.Cleanup(p.Close)
	return "http://" + s.Addr(), p.URL
}

// processCPU is the CPU time the process has used (user and system): on
// a shared machine it moves less than the wall clock with the others'
// load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// overheadClient is the benchmarks' client: keep-alive, no compression.
func overheadClient(tb testing.TB) *http.Client {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
	tb.Cleanup(c.CloseIdleConnections)
	return c
}

// post sends body to url and reads the answer whole; it returns the
// answer's bytes.
func overheadPost(tb testing.TB, c *http.Client, url, body string) int64 {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: %d %s, %v", url, resp.StatusCode, resp.Header.Get(wire.HeaderOutcome), err)
	}
	return n
}

// runHops runs the gateway and proxy sub-benchmarks of one workload:
// body posted to path, the answer read whole; per, when set, reports a
// per-unit figure of the answer (its chunks).
func runHops(b *testing.B, path, body string, per float64, unit string) {
	be := newOverheadBackend(b)
	gw, proxy := overheadHops(b, be)
	c := overheadClient(b)
	for _, hop := range []struct{ name, base string }{{"gateway", gw}, {"proxy", proxy}} {
		b.Run(hop.name, func(b *testing.B) {
			overheadPost(b, c, hop.base+path, body) // warm the connections
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := processCPU()
			b.ReportAllocs()
			b.ResetTimer()
			var bytesIn int64
			for range b.N {
				bytesIn += overheadPost(b, c, hop.base+path, body)
			}
			b.StopTimer()
			cpu := processCPU() - cpu0
			runtime.ReadMemStats(&after)
			b.SetBytes(bytesIn / int64(b.N))
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			if per > 0 {
				n := float64(b.N) * per
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/"+unit)
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/"+unit)
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/"+unit)
			}
		})
	}
}

// BenchmarkOverheadChat: a non-streamed chat (a 1 KB request, a small
// answer with usage) through the full defense chain and through the bare
// proxy.
func BenchmarkOverheadChat(b *testing.B) {
	runHops(b, wire.PathChat, overheadChatRequest+"}", 0, "")
}

// BenchmarkOverheadStream: a streamed chat of 1,000 tokens, one SSE event
// each, flushed one by one by the backend; B/chunk and allocs/chunk are
// the whole process's per relayed event.
func BenchmarkOverheadStream(b *testing.B) {
	runHops(b, wire.PathChat, overheadChatRequest+`,"stream":true}`, overheadStreamChunks+2, "chunk")
}

// BenchmarkOverheadBigAnswer: a non-streamed chat answer of 1 MB.
func BenchmarkOverheadBigAnswer(b *testing.B) {
	runHops(b, wire.PathChat, strings.Replace(overheadChatRequest, "llama-3.1-8b-instruct", "big", 1)+"}", 0, "")
}

// BenchmarkOverheadEmbeddings: an embeddings answer of 128 vectors of
// 1,536 floats (2.6 MB of JSON).
func BenchmarkOverheadEmbeddings(b *testing.B) {
	body := `{"model":"text-embedding-3-small","input":[` + strings.Repeat(`"a sentence of an indexer's batch",`, 127) + `"the last"]}`
	runHops(b, wire.PathEmbeddings, body, 0, "")
}

// BenchmarkOverheadIdleStreams: memory per open stream. Each op opens
// idleStreams streams whose backend sent one event and then waits, reads
// that event from each, and measures the live heap (after a GC) and the
// goroutines against before; then it releases them. heap_B/stream is
// the whole process's (client, hop, backend) per stream.
func BenchmarkOverheadIdleStreams(b *testing.B) {
	const idleStreams = 200
	be := newOverheadBackend(b)
	gw, proxy := overheadHops(b, be)
	body := strings.Replace(overheadChatRequest, "llama-3.1-8b-instruct", "idle", 1) + `,"stream":true}`
	for _, hop := range []struct{ name, base string }{{"gateway", gw}, {"proxy", proxy}} {
		b.Run(hop.name, func(b *testing.B) {
			c := overheadClient(b)
			var heap, goroutines float64
			for range b.N {
				be.mu.Lock()
				be.release = make(chan struct{})
				be.mu.Unlock()
				h, g := openIdleStreams(b, c, hop.base+wire.PathChat, body, idleStreams, be.release)
				heap += h
				goroutines += g
			}
			b.ReportMetric(heap/float64(b.N*idleStreams), "heap_B/stream")
			b.ReportMetric(goroutines/float64(b.N*idleStreams), "goroutines/stream")
		})
	}
}

// openIdleStreams opens n streams, waits for each one's first event,
// measures the heap and goroutines they hold, then closes release and
// reads them to their end.
func openIdleStreams(b *testing.B, c *http.Client, url, body string, n int, release chan struct{}) (heap, goroutines float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	resps := make([]*http.Response, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer k1")
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("first event: %d %v", resp.StatusCode, err)
			}
			resps[i] = resp
		})
	}
	wg.Wait()
	runtime.GC()
	runtime.ReadMemStats(&after)
	goroutines = float64(runtime.NumGoroutine() - g0)
	heap = float64(after.HeapAlloc) - float64(before.HeapAlloc)
	close(release)
	for _, r := range resps {
		if r != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return heap, goroutines
}
