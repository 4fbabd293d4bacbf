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

// A target's base path prefixes the request path.
func TestTargetBasePath(t *testing.T) {
	for _, target := range []string{"http://127.0.0.1:1/gw", "http://127.0.0.1:1/gw/"} {
		cfg := validConfig()
		cfg.Targets = []string{target}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		s := spec{route: RouteStandard, target: normalizeTargets(cfg.Targets)[0]}
		req, err := newRequest(context.Background(), s, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if want := "/gw" + wire.PathStandard + "ping"; req.URL.Path != want || req.URL.RawQuery != "" {
			t.Errorf("%s: request to %q, want %q", target, req.URL.RequestURI(), want)
		}
	}
}
