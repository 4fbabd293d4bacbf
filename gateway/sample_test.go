package gateway

import (
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
)

// TestSampleCarriesRefusal: a call every node answered 429 reaches the
// limiter as a refusal (Sample.Refused: a backend that refuses at its
// capacity); a failed call that no node refused (a dead node's reset, a
// 5xx) is a drop only.
func TestSampleCarriesRefusal(t *testing.T) {
	for _, tt := range []struct {
		name string
		res  callResult
		want admit.Sample
	}{
		{"every node answered 429", callResult{rtt: time.Millisecond, dropped: true, refused: true}, admit.Sample{RTT: time.Millisecond, Dropped: true, Refused: true}},
		{"no node answered", callResult{rtt: time.Millisecond, dropped: true}, admit.Sample{RTT: time.Millisecond, Dropped: true}},
		{"ok", callResult{rtt: time.Second}, admit.Sample{RTT: time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.sample(); got != tt.want {
				t.Fatalf("sample %+v, want %+v", got, tt.want)
			}
		})
	}
}
