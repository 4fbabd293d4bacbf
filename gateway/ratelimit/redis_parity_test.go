package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// paritySteps are what a parity case does, in order.
type parityStep struct {
	op   string // "allow", "sleep", "del" (a key suffix), "set" (a key suffix to value), "flush" (SCRIPT FLUSH)
	rule Rule
	cost int64
	// skew shifts the now passed to Allow: the scripts read Redis's clock
	// (TIME), so it must change nothing.
	skew   time.Duration
	sleep  time.Duration
	suffix string // del, set: appended to the limit's first Redis key
	value  string // set

	// Expected Decision of an allow step. retry is the RetryAfter a denial
	// would have if no time passed since the case began; the store may
	// answer less by at most the time that did pass. retry = -1: want the
	// rule's fallback bound (the script found no entry to wait for).
	allowed   bool
	remaining int64
	retry     time.Duration
	// slack, when > 0, is how long the case may have run for a denial to
	// be certain (a token bucket refills meanwhile); past it the step's
	// outcome is not checked, only that both servers' are possible.
	slack time.Duration
}

func allowStep(rule Rule, cost int64, allowed bool, remaining int64, retry time.Duration) parityStep {
	return parityStep{op: "allow", rule: rule, cost: cost, allowed: allowed, remaining: remaining, retry: retry}
}

var (
	swHour   = Rule{Algorithm: SlidingWindow, Limit: 3, Window: time.Hour}
	swHour10 = Rule{Algorithm: SlidingWindow, Limit: 10, Window: time.Hour}
	swHour5  = Rule{Algorithm: SlidingWindow, Limit: 5, Window: time.Hour}
	swShort  = Rule{Algorithm: SlidingWindow, Limit: 2, Window: 100 * time.Millisecond}
	tbSlow   = Rule{Algorithm: TokenBucket, ReplenishRate: 0.001, Burst: 3}  // a token per 1000 s
	tbRefill = Rule{Algorithm: TokenBucket, ReplenishRate: 5, Burst: 3}      // a token per 200 ms
	tbHuge   = Rule{Algorithm: TokenBucket, ReplenishRate: 1e12, Burst: 5}   // full again within a µs
	tbTiny   = Rule{Algorithm: TokenBucket, ReplenishRate: 2.5e-7, Burst: 2} // a token per 46 days
)

// parityCases are decision sequences whose results are fixed by the
// scripts alone: long windows, slow refills, and sleeps that only need to
// be long enough, never short enough.
var parityCases = []struct {
	name  string
	steps []parityStep
}{
	{"sliding window fills and denies", []parityStep{
		allowStep(swHour, 1, true, 2, 0),
		allowStep(swHour, 1, true, 1, 0),
		allowStep(swHour, 1, true, 0, 0),
		allowStep(swHour, 1, false, 0, time.Hour),
		allowStep(swHour, 1, false, 0, time.Hour),
	}},
	{"sliding window with costs", []parityStep{
		allowStep(swHour10, 4, true, 6, 0),
		allowStep(swHour10, 5, true, 1, 0),
		allowStep(swHour10, 2, false, 1, time.Hour), // needs the first entry (4) to leave
		allowStep(swHour10, 1, true, 0, 0),
		allowStep(swHour10, 1, false, 0, time.Hour),
		allowStep(swHour10, 5, false, 0, time.Hour), // needs entries 4 and 5 to leave
	}},
	{"sliding window expires", []parityStep{
		allowStep(swShort, 1, true, 1, 0),
		allowStep(swShort, 1, true, 0, 0),
		{op: "sleep", sleep: 150 * time.Millisecond},
		allowStep(swShort, 2, true, 0, 0),
		{op: "sleep", sleep: 150 * time.Millisecond},
		allowStep(swShort, 1, true, 1, 0),
	}},
	{"sliding window rebuilds a lost counter", []parityStep{
		allowStep(swHour5, 1, true, 4, 0),
		allowStep(swHour5, 2, true, 2, 0),
		{op: "del", suffix: ":n"},
		allowStep(swHour5, 2, true, 0, 0), // 3 rebuilt from the set + 2
		allowStep(swHour5, 1, false, 0, time.Hour),
	}},
	{"sliding window with a drifted counter", []parityStep{
		allowStep(swHour5, 1, true, 4, 0),
		{op: "set", suffix: ":n", value: "10"},
		// need 10+1-5 = 6 to leave, the set holds 1: no entry to wait for
		allowStep(swHour5, 1, false, 0, -1),
	}},
	{"sliding window ignores the caller's clock", []parityStep{
		{op: "allow", rule: swShort, cost: 1, skew: -time.Hour, allowed: true, remaining: 1},
		{op: "allow", rule: swShort, cost: 1, skew: time.Hour, allowed: true, remaining: 0},
		{op: "allow", rule: swShort, cost: 1, skew: 2 * time.Hour, allowed: false, remaining: 0, retry: swShort.Window, slack: swShort.Window},
	}},
	{"sliding window after SCRIPT FLUSH", []parityStep{
		allowStep(swHour, 2, true, 1, 0),
		{op: "flush"},
		allowStep(swHour, 1, true, 0, 0), // EVALSHA: NOSCRIPT, then EVAL
		allowStep(swHour, 1, false, 0, time.Hour),
	}},
	{"token bucket drains", []parityStep{
		allowStep(tbSlow, 1, true, 2, 0),
		allowStep(tbSlow, 2, true, 0, 0),
		allowStep(tbSlow, 1, false, 0, 1000*time.Second),
		allowStep(tbSlow, 3, false, 0, 3000*time.Second),
	}},
	{"token bucket refills up to its burst", []parityStep{
		allowStep(tbRefill, 3, true, 0, 0),
		{op: "allow", rule: tbRefill, cost: 1, allowed: false, remaining: 0, retry: 200 * time.Millisecond, slack: 200 * time.Millisecond},
		{op: "sleep", sleep: 700 * time.Millisecond}, // 3.5 tokens' worth: full (3)
		allowStep(tbRefill, 3, true, 0, 0),
	}},
	{"token bucket with rates that print with an exponent", []parityStep{
		allowStep(tbHuge, 1, true, 4, 0),
		allowStep(tbHuge, 5, true, 0, 0),
		allowStep(tbHuge, 2, true, 3, 0),
		allowStep(tbTiny, 2, true, 0, 0),
		allowStep(tbTiny, 1, false, 0, 4_000_000*time.Second),
	}},
	{"token bucket ignores the caller's clock", []parityStep{
		{op: "allow", rule: tbSlow, cost: 3, skew: -time.Hour, allowed: true, remaining: 0},
		// an hour ahead would have refilled 3.6 tokens
		{op: "allow", rule: tbSlow, cost: 1, skew: time.Hour, allowed: false, remaining: 0, retry: 1000 * time.Second},
	}},
	{"token bucket after SCRIPT FLUSH", []parityStep{
		allowStep(tbSlow, 1, true, 2, 0),
		{op: "flush"},
		allowStep(tbSlow, 2, true, 0, 0),
		allowStep(tbSlow, 1, false, 0, 1000*time.Second),
	}},
}

// parityResult is what one allow step gave, and the state left behind.
type parityResult struct {
	d       Decision
	checked bool // false: past the step's slack
}

// The Lua scripts give the same decisions on redis-server and on the
// embedded server: every sequence of parityCases, run on both, meets the
// same expectations step by step, and leaves the same state behind (set
// size, counter, tokens, a TTL).
func TestScriptsSameOnServerAndEmbedded(t *testing.T) {
	kinds := []backend{serverBackend, embeddedBackend}
	results := make([][][]parityResult, len(kinds)) // [kind][case][step]
	states := make([][]string, len(kinds))          // [kind][case]
	for ki, kb := range kinds {
		url := kb.start(t)
		c, err := OpenRedis(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s := NewRedis(c)
		for ci, pc := range parityCases {
			key := "parity:" + strconv.Itoa(ci)
			var res []parityResult
			t.Run(kb.name+"/"+pc.name, func(t *testing.T) {
				res = runParityCase(t, s, c, key, pc.steps)
			})
			results[ki] = append(results[ki], res)
			states[ki] = append(states[ki], parityState(t, s, c, key, pc.steps))
		}
	}
	for ci, pc := range parityCases {
		a, b := results[0][ci], results[1][ci]
		for si := range min(len(a), len(b)) {
			if a[si].checked && b[si].checked && (a[si].d.Allowed != b[si].d.Allowed || a[si].d.Remaining != b[si].d.Remaining || a[si].d.Limit != b[si].d.Limit) {
				t.Errorf("%s step %d: server %+v, embedded %+v", pc.name, si, a[si].d, b[si].d)
			}
		}
		if states[0][ci] != states[1][ci] {
			t.Errorf("%s: state left on the server %q, on the embedded server %q", pc.name, states[0][ci], states[1][ci])
		}
	}
}

func runParityCase(t *testing.T, s *RedisStore, c redis.UniversalClient, key string, steps []parityStep) []parityResult {
	ctx := context.Background()
	first := s.RedisKey(key, steps[0].rule.Algorithm)
	for _, st := range steps { // the algorithm of the first allow step names the key
		if st.op == "allow" {
			first = s.RedisKey(key, st.rule.Algorithm)
			break
		}
	}
	start := time.Now()
	var out []parityResult
	for i, st := range steps {
		switch st.op {
		case "sleep":
			time.Sleep(st.sleep)
		case "del":
			if err := c.Del(ctx, first+st.suffix).Err(); err != nil {
				t.Fatalf("step %d: DEL: %v", i, err)
			}
		case "set":
			if err := c.Set(ctx, first+st.suffix, st.value, time.Hour).Err(); err != nil {
				t.Fatalf("step %d: SET: %v", i, err)
			}
		case "flush":
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("step %d: SCRIPT FLUSH: %v", i, err)
			}
		case "allow":
			d, err := s.Allow(ctx, key, st.rule, st.cost, time.Now().Add(st.skew))
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			r := parityResult{d: d, checked: st.slack == 0 || elapsed < st.slack}
			out = append(out, r)
			if !r.checked {
				t.Logf("step %d: %v into the case, past its slack %v: outcome %+v not checked", i, elapsed, st.slack, d)
				continue
			}
			if d.Allowed != st.allowed || d.Remaining != st.remaining || d.Limit != st.rule.Capacity() {
				t.Fatalf("step %d (cost %d): %+v, want allowed %v remaining %d limit %d", i, st.cost, d, st.allowed, st.remaining, st.rule.Capacity())
			}
			switch {
			case st.allowed:
				if d.RetryAfter != 0 {
					t.Fatalf("step %d: allowed with RetryAfter %v", i, d.RetryAfter)
				}
			case st.retry < 0:
				if d.RetryAfter != st.rule.Window {
					t.Fatalf("step %d: RetryAfter %v, want the window %v (no entry to wait for)", i, d.RetryAfter, st.rule.Window)
				}
			default:
				// Less than the full wait by at most the time that passed
				// (and a microsecond of rounding).
				if d.RetryAfter > st.retry || d.RetryAfter < st.retry-elapsed-time.Microsecond {
					t.Fatalf("step %d: RetryAfter %v, want in [%v − %v, %v]", i, d.RetryAfter, st.retry, elapsed, st.retry)
				}
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, st.op)
		}
	}
	return out
}

// parityState describes the Redis state a case left: for a sliding window
// the set's size and the counter, for a token bucket the whole tokens; and
// whether every key has a TTL.
func parityState(t *testing.T, s *RedisStore, c redis.UniversalClient, key string, steps []parityStep) string {
	t.Helper()
	ctx := context.Background()
	algo := SlidingWindow
	for _, st := range steps {
		if st.op == "allow" {
			algo = st.rule.Algorithm
			break
		}
	}
	var out string
	for _, k := range s.scriptKeys(key, algo) {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", k, err)
		}
		out += fmt.Sprintf("%s ttl>0:%v ", k, ttl > 0)
	}
	k := s.RedisKey(key, algo)
	if algo == TokenBucket {
		tok, err := c.HGet(ctx, k, "tokens").Float64()
		if err != nil {
			t.Fatalf("HGET %s tokens: %v", k, err)
		}
		return out + fmt.Sprintf("tokens %d", int64(math.Floor(tok)))
	}
	n, err := c.ZCard(ctx, k).Result()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", k, err)
	}
	used, err := c.Get(ctx, k+":n").Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("GET %s:n: %v", k, err)
	}
	return out + fmt.Sprintf("set %d counter %q", n, used)
}
