package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// countingRecorder notes, when the answer's status is written, what
// levee_requests_total says for the route then.
type countingRecorder struct {
	*httptest.ResponseRecorder
	atHeader func() float64
	counted  float64
}

func (c *countingRecorder) WriteHeader(code int) {
	c.counted = c.atHeader()
	c.ResponseRecorder.WriteHeader(code)
}

// TestOutcomeCountedBeforeTheAnswer: an answer whose outcome does not
// depend on its write — an error (fail), a JSON reply (a fallback here),
// the standard route's answer, a streamed fallback — is counted in
// levee_requests_total before its first byte leaves, as a shed is: a
// client that has read it (and a lab comparing what clients saw with a
// scrape) finds it counted. Before the fix these were counted after the
// write, so a scrape right after the answer could miss them (a flake of
// TestRequeueRefusedEverywhere: "counts 3 outcomes for 4 calls").
func TestOutcomeCountedBeforeTheAnswer(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	fm.status.Store(http.StatusInternalServerError) // every model call fails: the fallback answers
	cfg := testConfig(fm.addr())
	cfg.Defenses.Retry = false
	s := startServer(t, cfg)
	for _, tc := range []struct {
		name, method, path, body, route, outcome string
		status                                   int
	}{
		{"bad body (fail)", http.MethodPost, wire.PathPredict, `{"features":`, "predict", "error", http.StatusBadRequest},
		{"fallback (reply)", http.MethodPost, wire.PathPredict, predictBody, "predict", "fallback", http.StatusOK},
		{"standard", http.MethodGet, "/v1/standard/x", "", "standard", "ok", http.StatusOK},
		{"streamed fallback", http.MethodPost, wire.PathChat, streamBody, "chat", "fallback", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels := map[string]string{"route": tc.route, "outcome": tc.outcome}
			before := counterSum(scrape(t, s), wire.MetricRequests, labels)
			rec := &countingRecorder{ResponseRecorder: httptest.NewRecorder(),
				atHeader: func() float64 { return counterSum(scrape(t, s), wire.MetricRequests, labels) }}
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer k1")
			s.G.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.status || rec.Header().Get(wire.HeaderOutcome) != tc.outcome {
				t.Fatalf("answer %d outcome %q, want %d %s", rec.Code, rec.Header().Get(wire.HeaderOutcome), tc.status, tc.outcome)
			}
			if rec.counted != before+1 {
				t.Errorf("levee_requests_total%v was %v when the status was written, want %v: counted after the answer", labels, rec.counted, before+1)
			}
		})
	}
}
