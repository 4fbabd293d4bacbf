package load

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

func TestClassify(t *testing.T) {
	h := func(kv ...string) http.Header {
		x := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			x.Set(kv[i], kv[i+1])
		}
		return x
	}
	for _, tc := range []struct {
		name     string
		status   int
		header   http.Header
		fallback bool
		want     wire.Outcome
	}{
		{"200 plain", 200, h(), false, wire.OutcomeOK},
		{"204", 204, h(), false, wire.OutcomeOK},
		{"200 fallback header", 200, h(wire.HeaderFallback, "true"), false, wire.OutcomeFallback},
		{"200 fallback body", 200, h(), true, wire.OutcomeFallback},
		{"header ok wins over body marker", 200, h(wire.HeaderOutcome, "ok"), true, wire.OutcomeOK},
		{"429 bare", 429, h(), false, wire.OutcomeShedRateLimit},
		{"429 overload header", 429, h(wire.HeaderOutcome, "shed_overload"), false, wire.OutcomeShedOverload},
		{"503 bare", 503, h(), false, wire.OutcomeError},
		{"503 queue full", 503, h(wire.HeaderOutcome, "shed_queue_full"), false, wire.OutcomeShedQueueFull},
		{"503 queue timeout", 503, h(wire.HeaderOutcome, "shed_queue_timeout"), false, wire.OutcomeShedQueueTimeout},
		{"503 budget", 503, h(wire.HeaderOutcome, "shed_budget"), false, wire.OutcomeShedBudget},
		{"503 overload", 503, h(wire.HeaderOutcome, "shed_overload"), false, wire.OutcomeShedOverload},
		{"504 bare", 504, h(), false, wire.OutcomeTimeout},
		{"504 header timeout", 504, h(wire.HeaderOutcome, "timeout"), false, wire.OutcomeTimeout},
		{"500", 500, h(), false, wire.OutcomeError},
		{"502", 502, h(), false, wire.OutcomeError},
		{"400", 400, h(), false, wire.OutcomeError},
		{"302 not followed", 302, h(), false, wire.OutcomeError},
		{"200 header fallback", 200, h(wire.HeaderOutcome, "fallback"), false, wire.OutcomeFallback},
		{"unknown header value", 200, h(wire.HeaderOutcome, "great"), false, wire.OutcomeError},
		{"server may not claim generator_dropped", 200, h(wire.HeaderOutcome, "generator_dropped"), false, wire.OutcomeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.status, tc.header, tc.fallback); got != tc.want {
				t.Errorf("classify = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestErrorOutcome(t *testing.T) {
	live := context.Background()
	dead, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-dead.Done()
	if o := errorOutcome(live, errors.New("connection refused")); o != wire.OutcomeError {
		t.Errorf("refused: %s", o)
	}
	if o := errorOutcome(dead, errors.New("read: connection reset")); o != wire.OutcomeTimeout {
		t.Errorf("error after deadline: %s", o)
	}
	if o := errorOutcome(live, context.DeadlineExceeded); o != wire.OutcomeTimeout {
		t.Errorf("deadline exceeded: %s", o)
	}
}

func TestReadSSE(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want bodyResult
	}{
		{"done", "data: {\"x\":1}\n\ndata: [DONE]\n\n", bodyResult{done: true}},
		{"no space, CRLF", "data:{\"x\":1}\r\n\r\ndata:[DONE]\r\n\r\n", bodyResult{done: true}},
		{"cut", "data: {\"x\":1}\n\n", bodyResult{}},
		{"fallback", "data: {\"fallback\":true}\n\ndata: [DONE]\n", bodyResult{done: true, fallback: true}},
		{"long line", "data: " + strings.Repeat("x", 10000) + "\ndata: [DONE]\n", bodyResult{done: true}},
		{"done without newline", "data: [DONE]", bodyResult{done: true}},
		// The tail of a line longer than the buffer is not a line of its
		// own: a stream cut after it has not ended with [DONE].
		{"a long line's tail", "data: " + strings.Repeat("x", 4090) + "data: [DONE]\n", bodyResult{}},
		{"a long line's tail with the marker", ": " + strings.Repeat("x", 4094) + "data: {\"fallback\":true}\n", bodyResult{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readSSE(strings.NewReader(tc.body))
			if err != nil || got != tc.want {
				t.Errorf("readSSE = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	_, err := readSSE(io.MultiReader(strings.NewReader("data: x\n"), errReader{}))
	if err == nil {
		t.Error("readSSE swallowed a read error")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }
