package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestErrorBodiesCarryTypeAndCode: every error a node answers over HTTP
// is OpenAI-shaped, with the status's type and a code from the contract's
// table (docs/CONTRACTS.md), as the gateway's are.
func TestErrorBodiesCarryTypeAndCode(t *testing.T) {
	// The busy request holds the one slot through every case (a minute;
	// closing the node ends it): it held it 300 ms, and on a loaded
	// machine the cases before "slots full" took longer, which then got
	// 200.
	k := fixedKnobs(60_000, 1, OverflowReject)
	n, url := startNode(t, k)
	failing := fixedKnobs(1, 2, OverflowQueue)
	failing.ErrorRate = 1
	errNode, errURL := startNode(t, failing)
	busy := fill(t, n, url, 1, 1, 0)
	defer func() {
		n.Close()
		collect(t, busy, 1)
	}()
	tests := []struct {
		name, method, url, body, auth string
		status                        int
		typ, code                     string
		counted                       string // levee_fakemodel_requests_total outcome, "" for none
	}{
		{"malformed", "POST", url + "/v1/chat/completions", `{"messages":`, "", 400, "invalid_request_error", wire.CodeInvalidRequest, wire.FakeOutcomeBadRequest},
		{"max_tokens", "POST", url + "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":99999999}`, "", 400, "invalid_request_error", wire.CodeInvalidRequest, wire.FakeOutcomeBadRequest},
		{"get chat", "GET", url + "/v1/chat/completions", ``, "", 405, "invalid_request_error", wire.CodeMethodNotAllowed, wire.FakeOutcomeBadRequest},
		{"too large", "POST", url + "/v1/completions", `{"prompt":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, "", 413, "invalid_request_error", wire.CodeRequestTooLarge, wire.FakeOutcomeBadRequest},
		{"no route", "GET", url + "/nope", ``, "", 404, "not_found_error", wire.CodeUnknownURL, ""},
		{"admin too large", "PATCH", url + "/admin/knobs", `{"slots":1` + strings.Repeat(" ", MaxBodyBytes) + `}`, "Bearer " + testToken, 413, "invalid_request_error", wire.CodeRequestTooLarge, ""},
		{"admin token", "GET", url + "/admin/knobs", ``, "Bearer wrong-token-0123456789", 401, "authentication_error", wire.CodeInvalidAPIKey, ""},
		{"slots full", "POST", url + "/v1/chat/completions", chatBody, "", 429, "rate_limit_error", wire.CodeOverloaded, wire.FakeOutcomeRejected},
		{"injected", "POST", errURL + "/v1/chat/completions", chatBody, "", 500, "server_error", wire.CodeInternalError, wire.FakeOutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := outcomeCounts(n, errNode)
			req, _ := http.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var e wire.ErrorBody
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("error body is not JSON: %v: %s", err, b)
			}
			if resp.StatusCode != tt.status || e.Error.Message == "" || e.Error.Type != tt.typ || e.Error.Code != tt.code {
				t.Fatalf("got %d %s, want %d type %q code %q", resp.StatusCode, b, tt.status, tt.typ, tt.code)
			}
			// The outcome counter moves by one for a model route, for
			// nothing else (docs/CONTRACTS.md's fake model metrics).
			after := outcomeCounts(n, errNode)
			for _, o := range wire.FakeOutcomes() {
				want := before[o]
				if o == tt.counted {
					want++
				}
				if after[o] != want {
					t.Errorf("outcome %s counted %d → %d, want %d", o, before[o], after[o], want)
				}
			}
			// A wrong token blames the header, as the gateway's 401s do.
			if tt.status == 401 && (e.Error.Field != "Authorization" || e.Error.Param != "Authorization") {
				t.Fatalf("401 %s: want field and param Authorization", b)
			}
		})
	}
}

// outcomeCounts sums the nodes' request outcomes.
func outcomeCounts(nodes ...*Node) map[string]uint64 {
	sum := map[string]uint64{}
	for _, n := range nodes {
		for o, c := range n.Stats().Outcomes {
			sum[o] += c
		}
	}
	return sum
}
