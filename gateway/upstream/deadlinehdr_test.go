package upstream

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// The deadline header is a positive count of whole milliseconds (the
// gateway itself answers 400 to "0"): a remaining time under one
// millisecond, possible with min_service_time 0, is sent as 1, not 0;
// from one millisecond up it is rounded down, never promising the node
// time the caller has not got.
func TestDeadlineHeaderPositive(t *testing.T) {
	p := newPool(t, Config{Nodes: []string{"http://127.0.0.1:9"}})
	s := &callState{p: p, ctx: context.Background(), c: Call{Method: http.MethodPost, Path: "/work"}}
	for _, tt := range []struct {
		remaining time.Duration
		want      string
	}{
		{time.Nanosecond, "1"}, {500 * time.Microsecond, "1"}, {time.Millisecond, "1"},
		{1999 * time.Microsecond, "1"}, {2500 * time.Millisecond, "2500"},
	} {
		a := &attempt{p: p, call: s, pk: picked{n: p.nodes[0]}}
		if err := s.request(a, tt.remaining, true); err != nil {
			t.Fatal(err)
		}
		a.cancel()
		if got := a.req.Header.Get(DeadlineHeader); got != tt.want {
			t.Errorf("remaining %v: header %q, want %q", tt.remaining, got, tt.want)
		}
	}
}
