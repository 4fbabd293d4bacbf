package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestHungRequestsCountAsServiceTime: a hung request holds its slot until
// its client gives up, and levee_fakemodel_service_seconds ("time a request
// held its slot") counts that time. Without it a node_hang fault left the
// histogram with the fast answers only, and the lab's capacity line (slots /
// observed mean service time) showed the node at full capacity: measured at
// hang_rate 0.5, 4 slots, 40 ms service and clients giving up after 400 ms,
// the line said 98 req/s while the slots turned over 45 times a second.
func TestHungRequestsCountAsServiceTime(t *testing.T) {
	const (
		requests = 6
		service  = 10 * time.Millisecond
		patience = 400 * time.Millisecond // the client's timeout: 40 × service
	)
	k := fixedKnobs(float64(service/time.Millisecond), requests, OverflowQueue)
	k.HangRate = 1
	n, url := startNode(t, k)
	var wg sync.WaitGroup
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			if _, _, err := post(ctx, url+"/v1/chat/completions", chatBody); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("hang: err %v, want the client's deadline", err)
			}
		}()
	}
	wg.Wait()
	waitFor(t, "every hang counted", func() bool { return n.Stats().Outcomes[OutcomeHang] == requests })
	count := scrape(t, url)["levee_fakemodel_service_seconds_count"]
	if count != requests {
		t.Fatalf("service_seconds count %v, want %d (one per hung request that held a slot)", count, requests)
	}
	// Each hang held its slot for nearly the client's patience; half of it
	// is a generous floor that still sits 20× above the configured service.
	if mean := scrapeSum(t, url, "levee_fakemodel_service_seconds") / count; mean < patience.Seconds()/2 {
		t.Fatalf("mean slot time of a hang %.3f s, want near the client's patience %.3f s", mean, patience.Seconds())
	}
}

// TestHungRequestAnsweredAtShutdown: a request the node hangs on is
// answered when a graceful shutdown begins, 503 with code unavailable
// ("the node is shutting down", docs/CONTRACTS.md), so the drain ends
// with it instead of waiting out its deadline.
func TestHungRequestAnsweredAtShutdown(t *testing.T) {
	k := fixedKnobs(1, 2, OverflowQueue)
	k.HangRate = 1
	n, url := startNode(t, k)
	type result struct {
		code int
		body []byte
		err  error
	}
	res := make(chan result, 1)
	go func() {
		code, body, err := post(context.Background(), url+wire.PathChat, chatBody)
		res <- result{code, body, err}
	}()
	waitInService(t, url, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a hung request: %v, want a complete drain", err)
	}
	r := <-res
	var e wire.ErrorBody
	if r.err != nil || r.code != 503 || json.Unmarshal(r.body, &e) != nil || e.Error.Code != wire.CodeUnavailable || e.Error.Type != "server_error" {
		t.Fatalf("hung request at shutdown: %d %s %v; want 503 code %s", r.code, r.body, r.err, wire.CodeUnavailable)
	}
}
