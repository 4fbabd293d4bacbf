package gateway

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestStreamEventNeverWaitsForTheModel: the relay flushes what it wrote
// before it waits for the model, even when the model sent a whole event
// and the beginning of the next in one write: the client gets the whole
// event while the model still holds the rest; events the model sent
// together all arrive.
func TestStreamEventNeverWaitsForTheModel(t *testing.T) {
	gate := make(chan struct{})
	up := newFakeModel(t, 1, 0)
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathChat {
			return
		}
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"tok0\"}}]}\n\n"+
			"data: {\"choices\":[{\"delta\":{\"content\":\"tok1\"}}]}\n\n"+
			"data: {\"choices\":[{\"delta\":{\"content\":\"tok2\"}}]}\n\ndata: {\"choi")
		w.(http.Flusher).Flush()
		<-gate
		_, _ = io.WriteString(w, "ces\":[{\"delta\":{\"content\":\"tok3\"}}]}\n\ndata: [DONE]\n\n")
	})
	s := startServer(t, testConfig(up.addr()))
	req, _ := http.NewRequest("POST", "http://"+s.Addr()+wire.PathChat, strings.NewReader(streamBody))
	req.Header.Set("Authorization", "Bearer k1")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, "tok"+string(rune('0'+i))) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		if blank, err := br.ReadString('\n'); blank != "\n" || err != nil {
			t.Fatalf("event %d's blank line: %q, %v", i, blank, err)
		}
	}
	close(gate)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "tok3") || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if got := resp.Trailer.Get(wire.HeaderOutcomeFinal); got != "ok" {
		t.Errorf("trailer %s = %q, want ok", wire.HeaderOutcomeFinal, got)
	}
}
