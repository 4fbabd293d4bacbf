package htmlreport

import (
	"bytes"
	"strings"
	"testing"
)

// A run that shared its limits through Redis says which, with its local
// decisions and failovers, in the run's header line; one without says
// nothing about Redis.
func TestPageShowsRedis(t *testing.T) {
	dir := t.TempDir()
	runs := loadAll(t, synth{name: "plain", samples: 40, seed: 1}.write(t, dir), synth{name: "cluster", samples: 40, seed: 2}.write(t, dir))
	runs[1].Summary.Redis = redisSummary{Kind: "cluster", Addr: "127.0.0.1:7000", Fallbacks: 1234,
		Failovers: []redisFailover{{Killed: "127.0.0.1:7001", AtS: 5, By: "127.0.0.1:7004", AfterS: 1.7}}}
	pg, err := build(runs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := render(&buf, pg); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	want := "redis cluster 127.0.0.1:7000, 1,234 local decisions, failover 127.0.0.1:7001 → 127.0.0.1:7004 in 1.7s (at 5.0s)"
	if !strings.Contains(html, want) {
		t.Errorf("page lacks %q", want)
	}
	if n := strings.Count(html, "· redis "); n != 1 {
		t.Errorf("%d runs show a Redis, want 1 (the plain run has none)", n)
	}
}
