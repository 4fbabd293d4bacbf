package gateway

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestStreamDoneThenClientLeavesIsOK: an OpenAI client stops reading a
// stream at "data: [DONE]" and closes its connection. When the model's
// stream is not over yet at that moment (here it stays open until its
// client leaves), the gateway's read of it fails once the client is gone
// — but the client got the whole answer, so the request is ok, not a
// timeout. Before the fix it was counted timeout (the client left) and
// its stream cut.
func TestStreamDoneThenClientLeavesIsOK(t *testing.T) {
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathChat {
			return // health checks
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		_, _ = io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the stream ends when the gateway leaves
	}))
	t.Cleanup(node.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(node.URL, "http://")))

	req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+wire.PathChat, strings.NewReader(streamBody))
	req.Header.Set("Authorization", "Bearer k1")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before [DONE]: %v", err)
		}
		if strings.TrimSpace(line) == "data: [DONE]" {
			break
		}
	}
	resp.Body.Close() // as OpenAI clients do at [DONE]: the connection closes

	eventually(t, 10*time.Second, func() bool {
		return counterSum(scrape(t, s), wire.MetricRequests, map[string]string{"route": "chat"}) == 1
	}, "the stream's outcome to be counted")
	fams := scrape(t, s)
	if got := counterSum(fams, wire.MetricRequests, map[string]string{"route": "chat", "outcome": "ok"}); got != 1 {
		t.Errorf("a stream relayed to its [DONE] was counted %v ok, want 1 (timeout: %v)", got,
			counterSum(fams, wire.MetricRequests, map[string]string{"route": "chat", "outcome": "timeout"}))
	}
}
