package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestClientLeavesMidCall: a client that gives up while a real backend
// still works on its request (a non-streamed chat, a stream before its
// first byte) has the backend's request cancelled — the backend sees its
// context end, so it can stop generating — and gives back its bulkhead
// place and budget tokens; the request is counted once, as a timeout
// (the client left). Over loopback HTTP, no sleeps: the backend reports
// the request's arrival and its end.
func TestClientLeavesMidCall(t *testing.T) {
	arrived := make(chan struct{}, 1)
	ended := make(chan struct{}, 1)
	quit := make(chan struct{}) // lets a handler the gateway never left return at the end
	t.Cleanup(func() { close(quit) })
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.PathHealthz {
			return
		}
		// Read the body, as a real server does: net/http notices a
		// closed connection (and ends the request's context) only once
		// the body has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done(): // works until the gateway leaves
			ended <- struct{}{}
		case <-quit:
		}
	}))
	t.Cleanup(node.Close) // after quit closes: cleanups run last first
	s := startServer(t, testConfig(strings.TrimPrefix(node.URL, "http://")))
	guard := time.After(20 * time.Second) // a hang guard, not a measurement
	for i, body := range []string{chatBody, streamBody} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Addr()+wire.PathChat, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k1")
		done := make(chan error, 1)
		go func() {
			resp, err := testClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		select {
		case <-arrived:
		case <-guard:
			t.Fatalf("%s: the backend never got the call", body)
		}
		cancel()
		select {
		case <-ended:
		case <-guard:
			t.Fatalf("%s: the backend's request was not cancelled when the client left", body)
		}
		<-done
		want := float64(i + 1)
		eventually(t, 10*time.Second, func() bool {
			f := scrape(t, s)
			return counterSum(f, wire.MetricRequests, map[string]string{"route": "chat"}) == want &&
				counterSum(f, wire.MetricRequests, map[string]string{"route": "chat", "outcome": "timeout"}) == want &&
				counterSum(f, wire.MetricInflight, nil) == 0 && counterSum(f, wire.MetricTokensInflight, nil) == 0
		}, "one timeout counted and the place and tokens given back")
	}
}
