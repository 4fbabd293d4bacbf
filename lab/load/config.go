package load

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// Route is a kind of request the generator sends.
type Route string

// Routes the generator knows.
const (
	RoutePredict    Route = wire.RoutePredict    // POST /v1/predict
	RouteChat       Route = wire.RouteChat       // POST /v1/chat/completions
	RouteChatStream Route = wire.RouteChatStream // POST /v1/chat/completions, "stream":true, SSE read to [DONE]
	RouteAgent      Route = wire.RouteAgent      // POST /v1/agent {"prompt":…,"max_tokens":N}
	RouteExport     Route = wire.RouteExport     // GET /v1/export?rows=N (N: the prompt-token draw, ≥ 1), read to the end
	RouteStandard   Route = wire.RouteStandard   // GET /v1/standard/ping
	// RouteCompletions is POST /v1/completions {"prompt":…,"max_tokens":N}
	// (not streamed); RouteCompletionsStream the same with "stream":true,
	// SSE read to [DONE]; RouteEmbeddings POST /v1/embeddings {"input":…}
	// (its prompt-token draw, at least 1).
	RouteCompletions       Route = wire.RouteCompletions
	RouteCompletionsStream Route = wire.RouteCompletionsStream
	RouteEmbeddings        Route = wire.RouteEmbeddings
)

// MaxAgentSteps bounds the steps an agent task may ask for.
const MaxAgentSteps = 16

// routeIndex is r's index in AllRoutes (len(AllRoutes) when unknown).
func routeIndex(r Route) int {
	for i, x := range AllRoutes {
		if x == r {
			return i
		}
	}
	return len(AllRoutes)
}

// AllRoutes lists the routes in a fixed order.
var AllRoutes = []Route{RoutePredict, RouteChat, RouteChatStream, RouteAgent, RouteExport, RouteStandard, RouteCompletions, RouteCompletionsStream, RouteEmbeddings}

// streamed reports whether r asks for an SSE stream ("stream":true), read
// to its data: [DONE]: a stream that ends without it is an error.
func (r Route) streamed() bool { return r == RouteChatStream || r == RouteCompletionsStream }

func knownRoute(r Route) bool {
	for _, k := range AllRoutes {
		if k == r {
			return true
		}
	}
	return false
}

// Arrival processes.
const (
	ArrivalConstant = "constant" // one arrival every 1/rate seconds
	ArrivalPoisson  = "poisson"  // exponential gaps with mean 1/rate
)

// Mix is the traffic mix: who sends what. Shares are relative weights (they
// need not sum to 1) and must be finite and ≥ 0 with a positive sum.
type Mix struct {
	// Priorities maps priority names (P0, P1, P2) to their share of arrivals.
	Priorities map[string]float64 `yaml:"priorities" json:"priorities"`
	// Keys maps a priority to the API key sent as "Authorization: Bearer KEY".
	// Every priority with a positive share needs an entry; an entry with an
	// empty key sends no Authorization header (an anonymous client). A
	// key with a control character or leading or trailing whitespace is
	// refused (wire.KeyProblem): no request could carry it.
	Keys map[string]string `yaml:"keys" json:"keys"`
	// Routes maps a Route name to its share of arrivals.
	Routes map[string]float64 `yaml:"routes" json:"routes"`
	// RoutesByPriority, when it has an entry for a priority, replaces Routes
	// for that priority's arrivals (P0 as trade/settle decisions only, say).
	RoutesByPriority map[string]map[string]float64 `yaml:"routes_by_priority" json:"routes_by_priority"`
	// PromptTokens is the [min, max] prompt size in tokens, drawn uniformly.
	// A "token" is one 4-byte word of the prompt. Export uses the draw as its
	// row count (at least 1); agent prompts have at least one token.
	PromptTokens [2]int `yaml:"prompt_tokens" json:"prompt_tokens"`
	// MaxTokens is max_tokens of chat, completion and agent requests; it
	// must be > 0 when a chat, chat-stream, agent, completions or
	// completions-stream route has a positive share.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// AgentSteps is the [min, max] tool-call steps an agent task asks for
	// ("steps"), drawn uniformly; [0, 0] sends none (the gateway's default).
	AgentSteps [2]int `yaml:"agent_steps" json:"agent_steps"`
}

// Config configures a Generator. The target rate is not part of it: it is
// set (and changed live) with Generator.SetRate and starts at 0.
type Config struct {
	// Targets are gateway base URLs ("http://127.0.0.1:8080", optionally
	// with a base path; no query or fragment); arrivals are
	// spread over them round-robin. At least one.
	Targets []string
	Mix     Mix
	// Arrival is ArrivalConstant or ArrivalPoisson.
	Arrival string
	// ClientTimeout bounds each request from the moment it is sent, body
	// included; it also travels as X-Levee-Deadline-Ms. Must be > 0.
	ClientTimeout time.Duration
	// MaxOutstanding caps the requests in flight; an arrival that finds the
	// cap full is never sent and ends as generator_dropped. Must be > 0.
	MaxOutstanding int
	// Seed seeds the arrival gaps and the mix draws, so a run's schedule is
	// reproducible.
	Seed int64
	// Retry is the clients' retry policy; the zero value never retries.
	Retry RetryPolicy
	// Reference holds, by priority name ("P0", "P1", "P2"), a rate-limit
	// rule the generator applies itself, exactly and in one place, to that
	// priority's sent requests at their intended arrival times: what one
	// limiter would let through of the same traffic
	// (PriorityWindow.ReferencePassedTotal). A limit several gateways
	// share is judged against it rather than against its nominal rate,
	// which an exact limiter itself falls short of when arrivals are
	// random (a freed place waits for the next arrival). Each priority is
	// one tenant. Not allowed with Retry: the gateway would decide on
	// attempts the reference never sees.
	Reference map[string]ratelimit.Rule
}

// Validate reports the first thing wrong with c, naming the field.
func (c Config) Validate() error {
	if len(c.Targets) == 0 {
		return errors.New("load: targets: at least one target URL is required")
	}
	if err := validateTargets(c.Targets); err != nil {
		return err
	}
	switch c.Arrival {
	case ArrivalConstant, ArrivalPoisson:
	default:
		return fmt.Errorf("load: arrival: %q is not %q or %q", c.Arrival, ArrivalConstant, ArrivalPoisson)
	}
	if c.ClientTimeout <= 0 {
		return fmt.Errorf("load: client_timeout: must be > 0, got %v", c.ClientTimeout)
	}
	if c.MaxOutstanding <= 0 {
		return fmt.Errorf("load: max_outstanding: must be > 0, got %d", c.MaxOutstanding)
	}
	if err := c.Retry.Validate(); err != nil {
		return err
	}
	if err := validateReference(c.Reference, c.Retry); err != nil {
		return err
	}
	return c.Mix.Validate()
}

func validateTargets(targets []string) error {
	if len(targets) == 0 {
		return errors.New("load: targets: at least one target URL is required")
	}
	for i, t := range targets {
		if err := CheckTarget(t); err != nil {
			return fmt.Errorf("load: targets[%d]: %q: %w", i, t, err)
		}
	}
	return nil
}

// CheckTarget returns what makes t unusable as a target, without naming
// a field (the caller does), or nil: a target is an http(s) base URL —
// scheme, a host that can be dialed, a port in [1, 65535] if any, an
// optional path — since request paths are appended to it.
func CheckTarget(t string) error {
	const want = "not an http(s) base URL such as http://127.0.0.1:8080"
	u, err := url.Parse(t)
	if err != nil {
		return fmt.Errorf("%s: %w", want, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || !dialableHost(u.Hostname()) {
		return errors.New(want)
	}
	// url.Parse takes any digits as a port: every request to such a
	// target would fail to dial.
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("the port must be in [1, 65535]")
		}
	}
	// Request paths are appended to the target: a query or fragment
	// would swallow them ("/?tenant=a/v1/…").
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(t, "#") {
		return errors.New("it has a query or fragment; a target is a base URL (scheme, host and an optional path)")
	}
	return nil
}

// dialableHost reports whether h, a URL's host name (brackets and port
// removed), can be dialed: not empty, no bracket left over, and a colon
// only in an IPv6 address. url.Parse keeps "http://:" (host ":") and
// "http://]" (host "]"), whose every request would fail.
func dialableHost(h string) bool {
	if h == "" || strings.ContainsAny(h, "[]") {
		return false
	}
	if strings.Contains(h, ":") {
		_, err := netip.ParseAddr(h)
		return err == nil
	}
	return true
}

// Validate reports the first thing wrong with the mix, naming the field.
func (m Mix) Validate() error {
	if err := validShares("mix.priorities", m.Priorities); err != nil {
		return err
	}
	for name, share := range m.Priorities {
		if _, ok := priorityIndex(name); !ok {
			return fmt.Errorf("load: mix.priorities: unknown priority %q (want P0, P1 or P2)", name)
		}
		if _, ok := m.Keys[name]; share > 0 && !ok {
			return fmt.Errorf("load: mix.keys: no API key for priority %s (use \"\" for an anonymous client)", name)
		}
	}
	for name, key := range m.Keys {
		if _, ok := priorityIndex(name); !ok {
			return fmt.Errorf("load: mix.keys: unknown priority %q (want P0, P1 or P2)", name)
		}
		// net/http would refuse every request with such a key (or a
		// server would never see its whitespace): a run of errors.
		if msg := wire.KeyProblem(key); msg != "" {
			return fmt.Errorf("load: mix.keys.%s: the API key cannot be sent in an Authorization header: %s", name, msg)
		}
	}
	if err := validRoutes("mix.routes", m.Routes); err != nil {
		return err
	}
	for prio, routes := range m.RoutesByPriority {
		if _, ok := priorityIndex(prio); !ok {
			return fmt.Errorf("load: mix.routes_by_priority: unknown priority %q (want P0, P1 or P2)", prio)
		}
		if err := validRoutes("mix.routes_by_priority."+prio, routes); err != nil {
			return err
		}
	}
	lo, hi := m.PromptTokens[0], m.PromptTokens[1]
	if lo < 0 || hi < lo {
		return fmt.Errorf("load: mix.prompt_tokens: want 0 ≤ min ≤ max, got [%d, %d]", lo, hi)
	}
	if m.MaxTokens < 0 {
		return fmt.Errorf("load: mix.max_tokens: must be ≥ 0, got %d", m.MaxTokens)
	}
	if lo, hi := m.AgentSteps[0], m.AgentSteps[1]; (lo != 0 || hi != 0) && (lo < 1 || hi < lo || hi > MaxAgentSteps) {
		return fmt.Errorf("load: mix.agent_steps: want 1 ≤ min ≤ max ≤ %d (or both 0), got [%d, %d]", MaxAgentSteps, lo, hi)
	}
	if m.MaxTokens == 0 {
		for _, r := range []Route{RouteChat, RouteChatStream, RouteAgent, RouteCompletions, RouteCompletionsStream} {
			if m.Routes[string(r)] > 0 {
				return fmt.Errorf("load: mix.max_tokens: must be > 0 when route %s is in the mix", r)
			}
			for _, routes := range m.RoutesByPriority {
				if routes[string(r)] > 0 {
					return fmt.Errorf("load: mix.max_tokens: must be > 0 when route %s is in the mix", r)
				}
			}
		}
	}
	return nil
}

// validRoutes checks one route table: valid shares over known routes.
func validRoutes(field string, routes map[string]float64) error {
	if err := validShares(field, routes); err != nil {
		return err
	}
	for name := range routes {
		if !knownRoute(Route(name)) {
			return fmt.Errorf("load: %s: unknown route %q (want one of %v)", field, name, AllRoutes)
		}
	}
	return nil
}

func validShares(field string, shares map[string]float64) error {
	if len(shares) == 0 {
		return fmt.Errorf("load: %s: empty", field)
	}
	sum := 0.0
	names := make([]string, 0, len(shares))
	for n := range shares {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := shares[n]
		if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
			return fmt.Errorf("load: %s: share of %q must be a finite number ≥ 0, got %v", field, n, s)
		}
		sum += s
	}
	if sum <= 0 {
		return fmt.Errorf("load: %s: shares sum to 0", field)
	}
	return nil
}
