package ratelimit

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisKeyPrefix starts every key the Redis store writes.
const DefaultRedisKeyPrefix = "levee:rl:"

// RedisStore is a Store whose state lives in Redis, so every gateway that
// points at the same Redis shares one limit.
//
// Each decision is one Lua script run with EVALSHA (EVAL once after a
// NOSCRIPT, e.g. after Redis restarted) — one round trip. The script reads
// the clock with TIME on the Redis server, so gateways with skewed clocks
// still agree; the now argument of Allow is ignored. The keys of one limit
// share a {hash tag}, so a script touches one slot and works on Redis
// Cluster:
//
//	sliding window: <prefix>{<key>}:sw    sorted set, one member per admitted request, score = µs
//	                <prefix>{<key>}:sw:n  the cost admitted in the window (sum over the set)
//	token bucket:   <prefix>{<key>}:tb    hash {tokens, ts}
//
// A key with "{", "}" or "%" in it has them escaped as %7B, %7D and %25,
// and the empty key is written "%", so that the tag is always the whole
// key and never empty (an empty tag would hash each Redis key on its own,
// and the script would fail with CROSSSLOT).
//
// Keys expire once idle for longer than the window (or the time to refill
// the bucket) plus a second, so idle tenants leave nothing behind.
//
// Over a Redis Cluster client (redis.ClusterClient) each decision goes to
// the master of its key's slot; Shard names that slot, so a Failover keeps
// one breaker per slot and a lost master sends only its own limits to the
// local fallback. A failed call asks the client to reload the cluster's
// slot map (in the background), so a replica promoted by a failover is found
// without waiting for the client's periodic reload.
//
// RedisStore returns an error whenever Redis does not answer in time; wrap
// it in a Failover to decide locally instead.
type RedisStore struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // client, when it is a cluster client; else nil
	prefix  string               // key prefix; immutable
	member  string               // random per-store prefix of sorted-set members; immutable
	seq     atomic.Uint64
}

// RedisOption configures a RedisStore.
type RedisOption func(*RedisStore)

// RedisKeyPrefix replaces DefaultRedisKeyPrefix (tests use it to keep runs
// apart). p must not contain "{" or "}": the hash tag of every key must be
// the limit's own key.
func RedisKeyPrefix(p string) RedisOption {
	return func(s *RedisStore) { s.prefix = p }
}

// NewRedis returns a store over client. The client is not closed by the
// store; its owner closes it.
func NewRedis(client redis.UniversalClient, opts ...RedisOption) *RedisStore {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	s := &RedisStore{client: client, prefix: DefaultRedisKeyPrefix, member: hex.EncodeToString(b[:])}
	s.cluster, _ = client.(*redis.ClusterClient)
	for _, o := range opts {
		o(s)
	}
	return s
}

// Warm gets the store ready for its first decisions, so they do not pay
// for connecting: it opens up to conns connections at once (each answering
// PING), loads its scripts (SCRIPT LOAD), so the first EVALSHA needs no
// EVAL, and checks that this client may run a script on the store's keys
// (EVALSHA, and EVAL when the script is not loaded, on the keys of a
// reserved limit; the script touches nothing). A SCRIPT LOAD this client
// is not allowed to run is no error: a decision's EVAL loads the script.
// It returns the first error; a store that failed to warm still works,
// but see RedisRefused.
func (s *RedisStore) Warm(ctx context.Context, conns int) error {
	conns = max(1, conns)
	errs := make(chan error, conns)
	for range conns {
		go func() { errs <- s.client.Ping(ctx).Err() }()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("ratelimit: redis warm-up: %w", first)
	}
	for _, sc := range []*redis.Script{redisSlidingWindowScript, redisTokenBucketScript, redisSettleScript} {
		if err := sc.Load(ctx, s.client).Err(); err != nil && !redis.IsPermissionError(err) {
			return fmt.Errorf("ratelimit: redis warm-up: load script: %w", err)
		}
	}
	for _, a := range []Algorithm{SlidingWindow, TokenBucket} {
		if err := redisKeysCheckScript.Run(ctx, s.client, s.scriptKeys(redisWarmKey, a)).Err(); err != nil {
			return fmt.Errorf("ratelimit: redis warm-up: a script on the store's keys: %w", err)
		}
	}
	return nil
}

// redisWarmKey is the limit key whose Redis keys Warm's check names; the
// check script writes nothing, so no such limit is ever stored.
const redisWarmKey = "levee:warm-up"

// redisKeysCheckScript touches nothing: run on a decision's keys it shows
// whether the server lets this client run a script on them (ACL command
// and key permissions) without changing any state.
var redisKeysCheckScript = redis.NewScript("return 1")

// RedisRefused reports whether err (from Warm or a decision) is the
// server refusing this client for good — a wrong or missing password
// (WRONGPASS, NOAUTH), an ACL that lacks a command or key the store needs
// (NOPERM), a database the server does not have — or this client refusing
// the server's TLS certificate. Waiting does not heal these; the URL or
// the server's configuration has to change. Errors that pass (a server
// down, slow, loading, full, read-only) are not refusals.
func RedisRefused(err error) bool {
	var cert *tls.CertificateVerificationError
	return redis.IsAuthError(err) || redis.IsPermissionError(err) ||
		redis.HasErrorPrefix(err, "DB index is out of range") || redis.HasErrorPrefix(err, "invalid DB index") ||
		errors.As(err, &cert)
}

// RedisKey is the Redis key (the first one, for a sliding window) that holds
// key's state under algorithm a.
func (s *RedisStore) RedisKey(key string, a Algorithm) string {
	if a == TokenBucket {
		return s.prefix + "{" + hashTag(key) + "}:tb"
	}
	return s.prefix + "{" + hashTag(key) + "}:sw"
}

// tagEscaper escapes what would end a hash tag early, injectively.
var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// hashTag is key as the content of a hash tag: never empty, with no braces.
func hashTag(key string) string {
	if key == "" {
		return "%" // escaping never yields a lone "%"
	}
	if !strings.ContainsAny(key, "{}%") {
		return key
	}
	return tagEscaper.Replace(key)
}

// scriptKeys are the KEYS of the script that decides key under algorithm
// a. They share one hash tag, {key}, hence one cluster slot.
func (s *RedisStore) scriptKeys(key string, a Algorithm) []string {
	k := s.RedisKey(key, a)
	if a == TokenBucket {
		return []string{k}
	}
	return []string{k, k + ":n"}
}

// Shard implements Sharder: over a cluster client, the hash slot of key's
// Redis keys (a slot fails with the master serving it); over one server, ""
// (one failure domain).
func (s *RedisStore) Shard(key string) string {
	if s.cluster == nil {
		return ""
	}
	return strconv.Itoa(KeySlot(s.RedisKey(key, SlidingWindow)))
}

// Allow implements Store. now is ignored: Redis's clock decides.
func (s *RedisStore) Allow(ctx context.Context, key string, rule Rule, cost int64, _ time.Time) (Decision, error) {
	if err := checkRequest(rule, cost); err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis allow %q: %w", key, err)
	}
	if err := rule.CheckRefill(); err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis allow %q: %w", key, err)
	}
	var (
		res []int64
		err error
	)
	keys := s.scriptKeys(key, rule.Algorithm)
	switch rule.Algorithm {
	case SlidingWindow:
		id := s.member + ":" + strconv.FormatUint(s.seq.Add(1), 36) + ":" + strconv.FormatInt(cost, 10)
		res, err = redisSlidingWindowScript.Run(ctx, s.client, keys,
			rule.Limit, rule.Window.Microseconds(), cost, id).Int64Slice()
	case TokenBucket:
		res, err = redisTokenBucketScript.Run(ctx, s.client, keys,
			luaRate(rule.ReplenishRate), rule.Burst, cost).Int64Slice()
	}
	if err != nil {
		if s.cluster != nil {
			// The slot's master may have failed over: refresh the slot map
			// in the background (go-redis coalesces these reloads).
			s.cluster.ReloadState(context.Background())
		}
		return Decision{}, fmt.Errorf("ratelimit: redis %s decision for %q: %w", rule.Algorithm, key, err)
	}
	if len(res) != 3 {
		return Decision{}, fmt.Errorf("ratelimit: redis %s decision for %q: script returned %d values, want 3", rule.Algorithm, key, len(res))
	}
	d := Decision{Allowed: res[0] == 1, Remaining: res[1], Limit: rule.Capacity()}
	if !d.Allowed {
		d.RetryAfter = time.Duration(res[2]) * time.Microsecond
		if d.RetryAfter <= 0 {
			// The script found no entry whose expiry frees enough room
			// (only possible if its counter drifted): a full window is the
			// safe upper bound.
			d.RetryAfter = rule.Window
			if rule.Algorithm == TokenBucket {
				d.RetryAfter = time.Duration(float64(cost) / rule.ReplenishRate * float64(time.Second))
			}
		}
	}
	return d, nil
}

// luaRate formats a token bucket's rate for the scripts' tonumber: 'f',
// never an exponent. The embedded server's Lua (gopher-lua) reads a
// number with an exponent and no point ("1e+06", "5e-05") as nil, which
// fails the script.
func luaRate(rate float64) string { return strconv.FormatFloat(rate, 'f', -1, 64) }

// redisSlidingWindowScript is an exact sliding window over a sorted set.
//
// KEYS[1] sorted set of admitted requests: member "<id>:<cost>", score = µs.
// KEYS[2] the sum of costs in KEYS[1].
// ARGV    limit, window (µs), cost, unique member id (ending ":<cost>").
// Returns {allowed 0|1, remaining, retry_after µs (0 when allowed, -1 unknown)}.
var redisSlidingWindowScript = redis.NewScript(redisSlidingWindowLua)

const redisSlidingWindowLua = `
if redis.replicate_commands then redis.replicate_commands() end -- Redis < 5: TIME before writes
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local cutoff = now - window
local ttl = math.ceil(window / 1000) + 1000

local function cost_of(member)
  return tonumber(string.match(member, ':(%d+)$')) or 1
end

local used = tonumber(redis.call('GET', KEYS[2]) or '')
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff)
if #old > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
end
local size = redis.call('ZCARD', KEYS[1])
if size == 0 then
  used = 0
elseif used == nil then
  -- the counter was lost (evicted): rebuild it from the set
  used = 0
  for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    used = used + cost_of(m)
  end
else
  for _, m in ipairs(old) do
    used = used - cost_of(m)
  end
  if used < 0 then used = 0 end
end

if used + cost <= limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  used = used + cost
  redis.call('SET', KEYS[2], used, 'PX', ttl)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, limit - used, 0}
end

if size == 0 then
  redis.call('DEL', KEYS[2])
elseif #old > 0 then
  redis.call('SET', KEYS[2], used, 'PX', ttl)
  redis.call('PEXPIRE', KEYS[1], ttl)
end

-- Denied: wait until the oldest entries, in order, free enough room.
local need = used + cost - limit
local freed = 0
local start = 0
while true do
  local batch = redis.call('ZRANGE', KEYS[1], start, start + 99, 'WITHSCORES')
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    freed = freed + cost_of(batch[i])
    if freed >= need then
      return {0, math.max(limit - used, 0), tonumber(batch[i + 1]) + window - now}
    end
  end
  start = start + 100
end
return {0, math.max(limit - used, 0), -1}
`

// tokenBucketRefillLua opens both token-bucket scripts (the decision and
// the settlement): Redis's clock, ARGV[1] rate (tokens/s) and ARGV[2]
// burst, and the bucket in KEYS[1] read and refilled up to now into
// tokens and ts. Each script must stand alone for EVALSHA, so they share
// it as source, not as a call.
const tokenBucketRefillLua = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])

local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1])
local ts = tonumber(v[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000000)
  ts = now
end
`

// redisTokenBucketScript is a token bucket in a hash.
//
// KEYS[1] hash {tokens (float), ts (µs of the last update)}.
// ARGV    replenish rate (tokens/s), burst, cost.
// Returns {allowed 0|1, remaining (whole tokens), retry_after µs (0 when allowed)}.
var redisTokenBucketScript = redis.NewScript(tokenBucketRefillLua + `
local cost = tonumber(ARGV[3])

local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) * 1000000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.0f', ts))
-- once full again the bucket equals a missing one, so it may expire then
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
-- a settled overuse may leave the bucket in debt: nothing remains then
return {allowed, math.max(0, math.floor(tokens)), retry}
`)
