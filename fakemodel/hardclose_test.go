package fakemodel

import (
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestHardCloseAnswersNothing: a request in service when the node is
// closed at once (Close, as a drain deadline does) gets no answer — its
// connection is cut — plain or streamed before its first token. Before,
// the handler returned without writing, and net/http finished the
// response as an empty 200 whenever it flushed before Close cut the
// connection: a client saw a success for work the node never did (1 in
// about 10 runs of levee's drain test).
func TestHardCloseAnswersNothing(t *testing.T) {
	for _, body := range []string{chatBody, `{"model":"t","stream":true,"messages":[{"role":"user","content":"hello"}],"max_tokens":4}`} {
		for range 20 {
			n, url := startNode(t, fixedKnobs(600000, 4, OverflowQueue))
			answered := make(chan string, 1)
			go func() {
				resp, err := testClient.Post(url+wire.PathChat, "application/json", strings.NewReader(body))
				if err != nil {
					answered <- ""
					return
				}
				resp.Body.Close()
				answered <- resp.Status
			}()
			for deadline := time.Now().Add(10 * time.Second); n.Stats().InService == 0; { // hang guard
				if time.Now().After(deadline) {
					t.Fatal("the request never went into service")
				}
				time.Sleep(time.Millisecond)
			}
			n.Close()
			if s := <-answered; s != "" {
				t.Fatalf("closed while in service, the request was answered %s, want its connection cut", s)
			}
		}
	}
}
