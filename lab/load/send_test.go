package load

import (
	"context"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// The deadline header is the client timeout in milliseconds rounded up and
// never 0, which the gateway refuses.
func TestDeadlineHeader(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{
		{time.Nanosecond, "1"},
		{500 * time.Microsecond, "1"},
		{999999, "1"},
		{time.Millisecond, "1"},
		{1500 * time.Microsecond, "2"},
		{2 * time.Second, "2000"},
		{2*time.Second + 1, "2001"},
	} {
		s := spec{route: RouteStandard, target: "http://127.0.0.1:1"}
		req, err := newRequest(context.Background(), s, tc.timeout)
		if err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get(wire.HeaderDeadlineMs); got != tc.want {
			t.Errorf("timeout %v: %s %q, want %q", tc.timeout, wire.HeaderDeadlineMs, got, tc.want)
		}
	}
}
