package ratelimit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// A redis-server that refuses the gateway — no password or a wrong one,
// an ACL user without EVALSHA or without the store's keys, a database it
// does not have — fails Open with an error that names the field and
// Redis's reason and never shows the password: none of these passes by
// waiting, and falling back would run every decision on the local share
// (or deny it, fail-closed) for as long as the gateway runs, behind one
// warning at start. A user allowed EVALSHA and EVAL but not SCRIPT is no
// refusal: its first EVAL loads the script, and Open finds Redis ready.
func TestOpenRedisRefused(t *testing.T) {
	srv := redistest.Start(t)
	rc := rawClient(t, srv)
	ctx := context.Background()
	for _, acl := range [][]string{
		{"noeval", "on", ">pw", "~*", "+@all", "-evalsha", "-eval"},
		{"nokeys", "on", ">pw", "~other:*", "+@all"},
		{"noscript", "on", ">pw", "~levee:rl:*", "+@all", "-script"},
	} {
		if err := rc.Do(ctx, append([]any{"ACL", "SETUSER"}, anys(acl)...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	addr := srv.Addr()
	refused := func(t *testing.T, url, reason string) {
		t.Helper()
		st, closer, err := Open(StoreConfig{Kind: "redis", URL: url, TimeoutMs: 1000})
		if err == nil {
			closer.Close()
			f := st.(*Failover)
			t.Fatalf("Open(%s) succeeded (breaker %v), want an error naming %s", url, f.State(), reason)
		}
		msg := err.Error()
		for _, want := range []string{"store field url", reason, "refused this gateway"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "s3cret") {
			t.Errorf("error %q shows the password", msg)
		}
	}
	works := func(t *testing.T, url string) {
		t.Helper()
		st, closer, err := Open(StoreConfig{Kind: "redis", URL: url, TimeoutMs: 1000})
		if err != nil {
			t.Fatalf("Open(%s): %v", url, err)
		}
		defer closer.Close()
		f := st.(*Failover)
		if f.State() != BreakerClosed {
			t.Fatalf("Open(%s): breaker %v after warm-up, want closed", url, f.State())
		}
		d, err := f.Allow(ctx, "k", Rule{Algorithm: TokenBucket, ReplenishRate: 10, Burst: 10}, 1, time.Now())
		if err != nil || !d.Allowed || f.RemoteDecisions() != 1 {
			t.Fatalf("Open(%s): %+v %v remote %d, want a decision by Redis", url, d, err, f.RemoteDecisions())
		}
	}

	t.Run("ACL user without EVALSHA", func(t *testing.T) { refused(t, "redis://noeval:pw@"+addr, "NOPERM") })
	t.Run("ACL user without the store's keys", func(t *testing.T) { refused(t, "redis://nokeys:pw@"+addr, "NOPERM") })
	t.Run("ACL user with a wrong password", func(t *testing.T) { refused(t, "redis://noeval:s3cret@"+addr, "WRONGPASS") })
	t.Run("a database the server does not have", func(t *testing.T) { refused(t, "redis://"+addr+"/99", "DB index is out of range") })
	t.Run("ACL user without SCRIPT", func(t *testing.T) { works(t, "redis://noscript:pw@"+addr) })

	if err := rc.ConfigSet(ctx, "requirepass", "hunter2").Err(); err != nil {
		t.Fatal(err)
	}
	t.Run("no password", func(t *testing.T) { refused(t, "redis://"+addr, "NOAUTH") })
	t.Run("wrong password", func(t *testing.T) { refused(t, "redis://:s3cret@"+addr, "WRONGPASS") })
	t.Run("the right password", func(t *testing.T) { works(t, "redis://:hunter2@"+addr) })
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
