package ratelimit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-lab/levee/internal/wire"
)

// Warm-up at Open: connections opened and how long it may take.
const (
	redisWarmConns   = 8
	redisWarmTimeout = time.Second
	// redisDiagnoseTimeout bounds the look at a server that failed the
	// warm-up (tlsMismatch).
	redisDiagnoseTimeout = 500 * time.Millisecond
)

// openRedis builds the store for StoreConfig kind "redis": a RedisStore over
// OpenRedis(cfg.URL), wrapped in a Failover with cfg's timeout, share and
// fail-open choice. It warms the store (connections, scripts) for up to a
// second, so the first decisions do not spend their few milliseconds
// connecting; when Redis is down or slow at start, Open still succeeds with
// the breaker open — decisions fall back at once and a probe finds Redis
// when it comes. When the server refuses the gateway (RedisRefused: a
// wrong password, an ACL without EVALSHA, a database it does not have) or
// speaks the other protocol (a redis:// URL at a TLS port, rediss:// at a
// plain one), Open fails: that does not pass by waiting, and falling back
// would hide it behind one warning for as long as the gateway runs — every
// decision on the local share (fail-open) or denied (fail-closed). The
// Closer closes the Redis client.
func openRedis(cfg StoreConfig) (Store, io.Closer, error) {
	client, err := OpenRedis(cfg.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("ratelimit: store field url: %w", err)
	}
	opts := []FailoverOption{FailoverName(wire.StoreRedis), FailoverLogger(cfg.Logger)}
	if cfg.TimeoutMs > 0 {
		opts = append(opts, FailoverTimeout(time.Duration(cfg.TimeoutMs)*time.Millisecond))
	}
	if cfg.Share > 0 {
		opts = append(opts, FailoverShare(cfg.Share))
	}
	if cfg.FailOpen != nil && !*cfg.FailOpen {
		opts = append(opts, FailoverFailClosed(true))
	}
	rs := NewRedis(client)
	f, err := NewFailover(rs, opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisWarmTimeout)
	defer cancel()
	if err := rs.Warm(ctx, redisWarmConns); err != nil {
		if fatal := refusedAtStart(client, err); fatal != nil {
			_ = client.Close()
			return nil, nil, fmt.Errorf("ratelimit: store field url: Redis at %s %w", redactedURL(cfg.URL), fatal)
		}
		f.trip(fmt.Errorf("warm-up at start: %w", err))
	}
	return f, client, nil
}

// refusedAtStart returns why the warm-up error err will not pass by
// waiting, or nil when it may (a server down or slow).
func refusedAtStart(client redis.UniversalClient, err error) error {
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return fmt.Errorf("presented a TLS certificate this gateway does not trust (the system's CAs decide; ?skip_verify=true skips the check): %w", err)
	}
	if RedisRefused(err) {
		return fmt.Errorf("refused this gateway (fix the URL's user, password or database, or the server's ACL: a decision runs EVALSHA and EVAL on keys %s*): %w", DefaultRedisKeyPrefix, err)
	}
	c, ok := client.(*redis.Client)
	if !ok {
		return nil // a cluster or sentinel client: many servers, no one diagnosis
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisDiagnoseTimeout)
	defer cancel()
	if mismatch := tlsMismatch(ctx, c.Options()); mismatch != nil {
		return fmt.Errorf("%w (the warm-up failed with: %w)", mismatch, err)
	}
	return nil
}

// tlsMismatch looks at the server behind o, whose warm-up failed, for the
// other protocol: with TLS configured, a server that answers a plain PING
// (a TLS client waits for a handshake a plain server never answers: the
// warm-up only timed out); without, a server that completes a TLS
// handshake (it closed the plain connection: the warm-up read EOF). It
// returns nil when it finds neither: a server down or slow answers
// neither way.
func tlsMismatch(ctx context.Context, o *redis.Options) error {
	if o.Network != "tcp" {
		return nil
	}
	var d net.Dialer
	if o.TLSConfig == nil {
		// Only the handshake: nothing is sent over it, so no certificate
		// needs to be trusted.
		td := tls.Dialer{NetDialer: &d, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a probe, no data
		conn, err := td.DialContext(ctx, "tcp", o.Addr)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		return fmt.Errorf("speaks TLS, and the URL asks for plain Redis: use rediss:// (with a CA the gateway trusts, or ?skip_verify=true), not redis://")
	}
	conn, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return nil
	}
	var b [1]byte
	if n, _ := conn.Read(b[:]); n == 1 && (b[0] == '+' || b[0] == '-') {
		// "+PONG", or an error reply such as "-NOAUTH": plain RESP either way.
		return fmt.Errorf("speaks plain Redis, and the URL asks for TLS: use redis://, not rediss://")
	}
	return nil
}
