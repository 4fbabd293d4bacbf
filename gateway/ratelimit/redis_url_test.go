package ratelimit

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestOpenRedisForms(t *testing.T) {
	tests := []struct {
		name  string
		url   string
		check func(t *testing.T, c redis.UniversalClient)
	}{
		{"single", "redis://127.0.0.1:6390/2", func(t *testing.T, c redis.UniversalClient) {
			o := mustSingle(t, c)
			if o.Addr != "127.0.0.1:6390" || o.DB != 2 || o.TLSConfig != nil {
				t.Errorf("addr %q db %d tls %v", o.Addr, o.DB, o.TLSConfig != nil)
			}
			// go-redis stores max_retries=-1 ("no retries") as 0 once
			// the client is built; its own default would be 3.
			if o.MaxRetries != 0 || !o.ContextTimeoutEnabled || o.DialerRetries != 1 {
				t.Errorf("defaults: max_retries %d context_timeout_enabled %v dialer_retries %d, want 0 (none) true 1", o.MaxRetries, o.ContextTimeoutEnabled, o.DialerRetries)
			}
		}},
		{"tls with user and password", "rediss://u:secret@example.com:6380", func(t *testing.T, c redis.UniversalClient) {
			o := mustSingle(t, c)
			if o.TLSConfig == nil || o.TLSConfig.ServerName != "example.com" || o.Username != "u" || o.Password != "secret" {
				t.Errorf("tls %v user %q", o.TLSConfig, o.Username)
			}
		}},
		{"explicit options win over the defaults", "redis://127.0.0.1:6379?max_retries=2&context_timeout_enabled=false&pool_size=7&dialer_retries=4", func(t *testing.T, c redis.UniversalClient) {
			o := mustSingle(t, c)
			if o.MaxRetries != 2 || o.ContextTimeoutEnabled || o.PoolSize != 7 || o.DialerRetries != 4 {
				t.Errorf("max_retries %d context_timeout_enabled %v pool_size %d dialer_retries %d", o.MaxRetries, o.ContextTimeoutEnabled, o.PoolSize, o.DialerRetries)
			}
		}},
		{"ipv6", "redis://[::1]:6379/1", func(t *testing.T, c redis.UniversalClient) {
			if o := mustSingle(t, c); o.Addr != "[::1]:6379" || o.DB != 1 {
				t.Errorf("addr %q db %d", o.Addr, o.DB)
			}
		}},
		{"unix socket", "unix:///tmp/redis.sock?db=3", func(t *testing.T, c redis.UniversalClient) {
			o := mustSingle(t, c)
			if o.Network != "unix" || o.Addr != "/tmp/redis.sock" || o.DB != 3 {
				t.Errorf("network %q addr %q db %d", o.Network, o.Addr, o.DB)
			}
		}},
		{"cluster", "redis+cluster://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000", func(t *testing.T, c redis.UniversalClient) {
			o := mustCluster(t, c)
			if got := strings.Join(o.Addrs, " "); got != "10.0.0.1:7000 10.0.0.2:7000 10.0.0.3:7000" {
				t.Errorf("addrs %q", got)
			}
			// a cluster client keeps -1 ("no retries"); its default is 0 → -1 too
			if o.MaxRetries != -1 || !o.ContextTimeoutEnabled {
				t.Errorf("defaults: max_retries %d context_timeout_enabled %v, want -1 (none) true", o.MaxRetries, o.ContextTimeoutEnabled)
			}
		}},
		{"comma list is a cluster", "redis://:pw@10.0.0.1:7000,10.0.0.2:7001?pool_size=3", func(t *testing.T, c redis.UniversalClient) {
			o := mustCluster(t, c)
			if got := strings.Join(o.Addrs, " "); got != "10.0.0.1:7000 10.0.0.2:7001" {
				t.Errorf("addrs %q", got)
			}
			if o.Password != "pw" || o.PoolSize != 3 || o.TLSConfig != nil {
				t.Errorf("password %q pool_size %d tls %v", o.Password, o.PoolSize, o.TLSConfig != nil)
			}
		}},
		{"comma list with database 0", "redis://10.0.0.1:7000,10.0.0.2:7001/0", func(t *testing.T, c redis.UniversalClient) {
			if o := mustCluster(t, c); len(o.Addrs) != 2 {
				t.Errorf("addrs %q", o.Addrs)
			}
		}},
		{"comma list over TLS", "rediss://10.0.0.1:7000,10.0.0.2:7001", func(t *testing.T, c redis.UniversalClient) {
			if o := mustCluster(t, c); o.TLSConfig == nil {
				t.Error("no TLS config")
			}
		}},
		{"sentinel", "redis+sentinel://10.0.0.1:26379?master_name=mymaster&addr=10.0.0.2:26379", func(t *testing.T, c redis.UniversalClient) {
			if _, ok := c.(*redis.Client); !ok {
				t.Errorf("client is %T, want a sentinel-backed *redis.Client", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenRedis(tt.url)
			if err != nil {
				t.Fatalf("OpenRedis(%q): %v", tt.url, err)
			}
			defer c.Close()
			tt.check(t, c)
		})
	}
}

func TestOpenRedisBadURLs(t *testing.T) {
	tests := []struct {
		name, url, want string
	}{
		{"empty", "", "redis URL is empty"},
		{"blank", "  ", "redis URL is empty"},
		{"no scheme", "127.0.0.1:6379", "does not parse"},
		{"host as scheme", "localhost:6379", `unsupported scheme "localhost"`},
		{"bad bool", "redis://127.0.0.1:6379?context_timeout_enabled=maybe", "context_timeout_enabled"},
		{"bad dialer retries", "redis://127.0.0.1:6379?dialer_retries=0", "dialer_retries"},
		{"unknown scheme", "http://127.0.0.1:6379", `unsupported scheme "http"`},
		{"no host", "redis://", "has no host"},
		{"bad db", "redis://127.0.0.1:6379/abc", "invalid database number"},
		{"unknown option", "redis://127.0.0.1:6379?pool_sise=3", "pool_sise"},
		{"sentinel without master", "redis+sentinel://10.0.0.1:26379", "missing master_name"},
		{"cluster without host", "redis+cluster://", "no seed node"},
		{"cluster with a database", "redis+cluster://10.0.0.1:7000/3", "only database 0"},
		{"comma list with a database", "redis://:pw@10.0.0.1:7000,10.0.0.2:7001/2?pool_size=3", "only database 0"},
		{"cluster with a bad path", "redis+cluster://10.0.0.1:7000/x/y", "only database 0"},
		{"empty host in list", "redis://a:1,,b:2", "empty host"},
		{"list with unix scheme", "unix://a,b", "comma list"},
		{"unix with a host", "unix://relative/redis.sock", `host "relative" in a unix URL`},
		{"unix without a path", "unix:///", "no socket path"},
		{"port out of range", "redis://127.0.0.1:99999", `port "99999", want 1–65535`},
		{"port zero", "rediss://127.0.0.1:0", `port "0"`},
		{"seed port out of range", "redis+cluster://10.0.0.1:7000?addr=10.0.0.2:70001", `port "70001"`},
		{"negative database", "redis://127.0.0.1:6379/-1", "database -1, want ≥ 0"},
		{"password is not echoed", "redis://user:hunter2@127.0.0.1:6379?bogus=1", "bogus"},
		{"control character", "redis://user:hunter2@127.0.0.1:6379/\x7f", "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenRedis(tt.url)
			if err == nil {
				c.Close()
				t.Fatalf("OpenRedis(%q) = nil error, want one containing %q", tt.url, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestOpenKindRedisBadURL(t *testing.T) {
	_, _, err := Open(StoreConfig{Kind: "redis", URL: "http://nope"})
	if err == nil || !strings.Contains(err.Error(), "store field url") {
		t.Fatalf("Open with a bad redis URL: %v, want an error naming field url", err)
	}
}

func mustSingle(t *testing.T, c redis.UniversalClient) *redis.Options {
	t.Helper()
	cc, ok := c.(*redis.Client)
	if !ok {
		t.Fatalf("client is %T, want *redis.Client", c)
	}
	return cc.Options()
}

func mustCluster(t *testing.T, c redis.UniversalClient) *redis.ClusterOptions {
	t.Helper()
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("client is %T, want *redis.ClusterClient", c)
	}
	return cc.Options()
}
