package ratelimit

import (
	"context"
	"testing"
	"time"
)

// TestOpenLocalShare: a local store opened with share s admits s of each
// rule's limit, so N gateways with in-process stores admit the global limit
// between them instead of N times it.
func TestOpenLocalShare(t *testing.T) {
	rule := Rule{Algorithm: SlidingWindow, Limit: 90, Window: time.Second}
	now := time.Unix(1000, 0)
	for _, tt := range []struct {
		share float64
		want  int
	}{{0, 90}, {1, 90}, {0.5, 45}, {1.0 / 3, 30}} {
		s, c, err := Open(StoreConfig{Kind: "local", Share: tt.share})
		if err != nil {
			t.Fatal(err)
		}
		admitted := 0
		for range 200 {
			d, err := s.Allow(context.Background(), "tenant:route", rule, 1, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted++
			}
		}
		c.Close()
		if admitted != tt.want {
			t.Errorf("share %v: admitted %d of 200, want %d", tt.share, admitted, tt.want)
		}
	}
	if _, _, err := Open(StoreConfig{Kind: "local", Share: 1.5}); err == nil {
		t.Error("share 1.5 accepted")
	}
}
