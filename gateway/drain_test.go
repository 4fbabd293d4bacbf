package gateway

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestDrainReadinessIsObservable: with drain_delay, a Shutdown first
// answers /readyz 503 on the traffic listener while it still serves
// traffic (what a load balancer needs to see to take the gateway out of
// rotation), and stops accepting only after the delay (cut short here by
// ending Shutdown's context).
func TestDrainReadinessIsObservable(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	cfg := testConfig(fm.addr())
	cfg.DrainTimeout = time.Hour
	cfg.DrainDelay = time.Hour - time.Minute // only the test's cancel ends it
	s := startServer(t, cfg)
	if a := call(t, "GET", "http://"+s.Addr()+"/readyz", "", ""); a.status != 200 {
		t.Fatalf("readyz before the drain: %v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	eventually(t, 10*time.Second, func() bool {
		return call(t, "GET", "http://"+s.Addr()+"/readyz", "", "").status == 503
	}, "readyz to answer 503 during the drain")
	if a := call(t, "POST", "http://"+s.Addr()+"/v1/predict", "k1", predictBody); a.status != 200 || a.outcome != "ok" {
		t.Errorf("a request during the drain delay: %v", a)
	}
	cancel() // ends the delay: Shutdown returns
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Errorf("still accepting after shutdown")
	}
}

// TestDrainDelayBounds: drain_delay is part of drain_timeout.
func TestDrainDelayBounds(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 10 * time.Second, time.Minute} {
		cfg := testConfig("127.0.0.1:1")
		cfg.DrainTimeout = 10 * time.Second
		cfg.DrainDelay = d
		var ce *ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "drain_delay" {
			t.Errorf("drain_delay %s: %v, want an error naming drain_delay", d, err)
		}
	}
}
