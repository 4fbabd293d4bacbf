package gateway

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/jsonstrict"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/pressure"
	"github.com/levee-lab/levee/internal/wire"
)

// State is the answer of GET /admin/state and of every PUT.
type State struct {
	Defenses  map[string]bool      `json:"defenses"`
	Level     string               `json:"level"`
	Limits    LimitsState          `json:"limits"`
	Upstreams []upstream.NodeStats `json:"upstreams"`
	Retries   upstream.Counters    `json:"retries"`
	Guard     admit.GuardStats     `json:"guard"`
	Pressure  wire.PressurePatch   `json:"pressure"` // every field set
}

// LimitsState is the limits part of State.
type LimitsState struct {
	Classes             map[string]ClassState `json:"classes"`
	TokenBudget         int64                 `json:"token_budget"`
	TokenRequestCap     int64                 `json:"token_request_cap"` // the per-request cap in force
	TokensInflight      int64                 `json:"tokens_inflight"`
	MaxSubcallsInflight int64                 `json:"max_subcalls_inflight"`
	RateLimit           RateLimitState        `json:"ratelimit"`
}

// RateLimitState lists the rate-limit rules in force.
type RateLimitState struct {
	Store string     `json:"store"`
	Rules []ruleJSON `json:"rules"`
}

// ClassState is one bulkhead: its configuration and what it holds now.
type ClassState struct {
	Algorithm      string `json:"algorithm"`
	Limit          int    `json:"limit"`            // current (adaptive limiters move it)
	ConfiguredLmt  int    `json:"configured_limit"` // configured (initial) limit
	Min            int    `json:"min"`
	Max            int    `json:"max"`
	QueueSize      int    `json:"queue_size"`
	QueueTimeoutMs int64  `json:"queue_timeout_ms"`
	Inflight       int    `json:"inflight"`
	Queued         []int  `json:"queued"` // by priority P0, P1, P2
}

// State returns the gateway's current state.
func (g *Gateway) State() State {
	g.limMu.Lock()
	defer g.limMu.Unlock()
	return g.stateLocked()
}

func (g *Gateway) stateLocked() State {
	st := State{
		Defenses:  g.Defenses().Map(),
		Level:     g.guard.Level().String(),
		Upstreams: g.pool.Stats(),
		Retries:   g.pool.Counters(),
		Guard:     g.guard.Snapshot(),
		Pressure:  g.press.Config().Patch(),
		Limits: LimitsState{
			Classes:             make(map[string]ClassState, numClasses),
			TokenBudget:         g.budget.Capacity(),
			TokenRequestCap:     g.budget.RequestCap(),
			TokensInflight:      g.budget.Inflight(),
			MaxSubcallsInflight: g.subcalls.capacity(),
			RateLimit:           RateLimitState{Store: g.cfg.RateLimit.Store.Kind, Rules: []ruleJSON{}},
		},
	}
	for c, cc := range g.classConfigs() {
		bs := g.bulkheads[c].Stats()
		st.Limits.Classes[classID(c).String()] = ClassState{
			Algorithm: cc.Limiter.Algorithm, Limit: bs.Limit, ConfiguredLmt: cc.Limiter.Limit, Min: cc.Limiter.Min, Max: cc.Limiter.Max,
			QueueSize: cc.QueueSize, QueueTimeoutMs: cc.QueueTimeout.Milliseconds(),
			Inflight: bs.Inflight, Queued: bs.QueueDepth[:],
		}
	}
	for _, r := range g.rules.Load().rules {
		st.Limits.RateLimit.Rules = append(st.Limits.RateLimit.Rules, toRuleJSON(r))
	}
	return st
}

// requireToken wraps h with bearer-token authentication (constant time).
func requireToken(token string, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="levee-admin"`)
			writeError(w, http.StatusUnauthorized, 0, false, "Authorization", "missing or wrong admin token")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (g *Gateway) newAdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+wire.PathAdminState, func(w http.ResponseWriter, r *http.Request) {
		writeAdmin(w, g.State())
	})
	mux.HandleFunc("PUT "+wire.PathAdminDefenses, g.putDefenses)
	mux.HandleFunc("PUT "+wire.PathAdminLimits, g.putLimits)
	mux.HandleFunc("PUT "+wire.PathAdminPressure, g.putPressure)
	mux.HandleFunc("PUT "+wire.PathAdminLevel, g.putLevel)
	// The catch-all would hide the mux's own 405 from a known path asked
	// with the wrong method, so it answers that itself.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if m, ok := adminMethods[r.URL.Path]; ok {
			w.Header().Set("Allow", m)
			writeError(w, http.StatusMethodNotAllowed, 0, false, "", r.URL.Path+" takes "+m+", not "+r.Method)
			return
		}
		writeError(w, http.StatusNotFound, 0, false, "", "no admin route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// adminMethods is the one method of each admin path (see newAdminHandler).
var adminMethods = map[string]string{
	wire.PathAdminState:    http.MethodGet,
	wire.PathAdminDefenses: http.MethodPut,
	wire.PathAdminLimits:   http.MethodPut,
	wire.PathAdminPressure: http.MethodPut,
	wire.PathAdminLevel:    http.MethodPut,
}

func writeAdmin(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// adminBodyLimit is the largest admin body decodeAdmin reads.
const adminBodyLimit = 1 << 20

// decodeAdmin decodes one JSON object with no unknown fields. On error it
// answers and returns false: 413 for a body over adminBodyLimit, 400 for
// any other failure to read the body (shorter than its Content-Length, a
// broken chunked encoding, a client that went away) and 400 naming the
// field for a bad JSON object.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, adminBodyLimit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, 0, false, "", fmt.Sprintf("body exceeds the limit of %d bytes", mbe.Limit))
			return false
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			writeError(w, http.StatusBadRequest, 0, false, "", fmt.Sprintf("body shorter than its Content-Length (%d bytes)", r.ContentLength))
			return false
		}
		writeError(w, http.StatusBadRequest, 0, false, "", "reading body: "+err.Error())
		return false
	}
	if !checkNames(w, body, v, "") {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeDecodeError(w, err, "")
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, 0, false, "", "trailing data after the JSON object")
		return false
	}
	return true
}

// decodeAdminPart decodes raw, the value at path of an admin body, into v
// with no unknown fields. On error it answers 400 naming the field under
// path and returns false. Map values are decoded by it one by one, since
// encoding/json leaves a map's key out of a type error's field.
func decodeAdminPart(w http.ResponseWriter, raw json.RawMessage, v any, path string) bool {
	if !checkNames(w, raw, v, path) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeDecodeError(w, err, path)
		return false
	}
	return true
}

// memberPath is the path of the member name of the object at parent (""
// for the body), as jsonstrict's paths write it: an empty name is `""`
// (classes."" for {"classes":{"":{}}}), so a path never ends in "." and a
// member is never mistaken for the body.
func memberPath(parent, name string) string {
	if name == "" {
		name = `""`
	}
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// checkNames answers 400 and returns false when data, the value at path,
// names a field that matches only when case is ignored or gives a name
// twice: encoding/json would take either silently (see jsonstrict).
func checkNames(w http.ResponseWriter, data []byte, v any, path string) bool {
	var ne *jsonstrict.NameError
	if err := jsonstrict.Check(data, v); errors.As(err, &ne) {
		field := ne.Path
		if path != "" {
			field = path + "." + field
		}
		writeError(w, http.StatusBadRequest, 0, false, field, field+": "+ne.Msg)
		return false
	}
	return true
}

// writeDecodeError answers 400 for err, a decoding error of the value at
// path (or of the body, path ""), in JSON's words as the public API
// answers ("must be an integer, got a JSON string"), not Go's type names.
// Unknown names never get here: checkNames refuses them first, by path.
func writeDecodeError(w http.ResponseWriter, err error, path string) {
	join := func(field string) string {
		switch {
		case path == "":
			return field
		case field == "":
			return path
		}
		return path + "." + field
	}
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		re := openai.TypeError(te)
		field := join(re.Field)
		if field == "" { // the body itself is not an object ([], "x")
			writeError(w, http.StatusBadRequest, 0, false, "", "the body "+re.Msg)
			return
		}
		writeError(w, http.StatusBadRequest, 0, false, field, field+": "+re.Msg)
	default:
		writeError(w, http.StatusBadRequest, 0, false, path, "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
}

// putDefenses is PUT /admin/defenses: a partial object of booleans.
func (g *Gateway) putDefenses(w http.ResponseWriter, r *http.Request) {
	var patch map[string]json.RawMessage
	if !decodeAdmin(w, r, &patch) {
		return
	}
	d := g.Defenses()
	for _, name := range slices.Sorted(maps.Keys(patch)) {
		field := memberPath("", name)
		var v *bool
		if !decodeAdminPart(w, patch[name], &v, field) {
			return
		}
		if v == nil {
			writeError(w, http.StatusBadRequest, 0, false, field, "must be true or false")
			return
		}
		if !d.Set(name, *v) {
			writeError(w, http.StatusBadRequest, 0, false, field, "unknown defense; want one of "+strings.Join(defenseNames(), ", "))
			return
		}
	}
	g.applyDefenses(d)
	g.log.Info("gateway: defenses", "defenses", fmt.Sprint(d.Map()))
	writeAdmin(w, g.State())
}

// limitsPatch is the body of PUT /admin/limits; every part is optional.
type limitsPatch struct {
	Classes             map[string]json.RawMessage `json:"classes"` // each a classPatch
	TokenBudget         *int64                     `json:"token_budget"`
	MaxSubcallsInflight *int64                     `json:"max_subcalls_inflight"`
	RateLimit           *struct {
		Rules *[]ruleJSON `json:"rules"`
	} `json:"ratelimit"`
}

type classPatch struct {
	Algorithm      *string `json:"algorithm"`
	Limit          *int    `json:"limit"`
	Min            *int    `json:"min"`
	Max            *int    `json:"max"`
	QueueSize      *int    `json:"queue_size"`
	QueueTimeoutMs *int64  `json:"queue_timeout_ms"`
}

// apply returns cc with p's fields set, or an error naming a field whose
// value cannot even be converted (a millisecond count beyond what a
// duration holds would wrap around into a small one).
func (p classPatch) apply(cc admit.BulkheadConfig) (admit.BulkheadConfig, error) {
	if p.Algorithm != nil {
		cc.Limiter.Algorithm = *p.Algorithm
	}
	if p.Limit != nil {
		cc.Limiter.Limit = *p.Limit
	}
	if p.Min != nil {
		cc.Limiter.Min = *p.Min
	}
	if p.Max != nil {
		cc.Limiter.Max = *p.Max
	}
	if p.QueueSize != nil {
		cc.QueueSize = *p.QueueSize
	}
	if p.QueueTimeoutMs != nil {
		d, ok := msDuration(*p.QueueTimeoutMs, time.Millisecond, maxQueueTimeout)
		if !ok {
			return cc, fmt.Errorf("must be in [1, %d] milliseconds (got %d)", maxQueueTimeout.Milliseconds(), *p.QueueTimeoutMs)
		}
		cc.QueueTimeout = d
	}
	return cc, nil
}

// putLimits is PUT /admin/limits. The whole patch is validated before any
// of it applies; a bad field is a 400 naming it.
func (g *Gateway) putLimits(w http.ResponseWriter, r *http.Request) {
	var patch limitsPatch
	if !decodeAdmin(w, r, &patch) {
		return
	}
	bad := func(err error) {
		var ce *ConfigError
		if errors.As(err, &ce) {
			writeError(w, http.StatusBadRequest, 0, false, strings.ReplaceAll(ce.Field, "queue_timeout", "queue_timeout_ms"), ce.Msg)
			return
		}
		writeError(w, http.StatusBadRequest, 0, false, "", err.Error())
	}
	g.limMu.Lock()
	defer g.limMu.Unlock()
	classes := g.cfg.Classes
	ptrs := map[string]*admit.BulkheadConfig{wire.ClassAI: &classes.AI, wire.ClassAgent: &classes.Agent, wire.ClassStream: &classes.Stream, wire.ClassStandard: &classes.Standard}
	for _, name := range slices.Sorted(maps.Keys(patch.Classes)) {
		field := memberPath("classes", name)
		cc, ok := ptrs[name]
		if !ok {
			writeError(w, http.StatusBadRequest, 0, false, field, fmt.Sprintf("unknown class; want %s, %s, %s or %s", wire.ClassAI, wire.ClassAgent, wire.ClassStream, wire.ClassStandard))
			return
		}
		var cp classPatch
		if !decodeAdminPart(w, patch.Classes[name], &cp, field) {
			return
		}
		next, err := cp.apply(*cc)
		if err != nil {
			writeError(w, http.StatusBadRequest, 0, false, field+".queue_timeout_ms", err.Error())
			return
		}
		*cc = next
		if err := validateClass(field, *cc); err != nil {
			bad(err)
			return
		}
	}
	if patch.TokenBudget != nil && (*patch.TokenBudget < 1 || *patch.TokenBudget > maxTokenBudget) {
		writeError(w, http.StatusBadRequest, 0, false, "token_budget", fmt.Sprintf("must be in [1, %d] (got %d)", int64(maxTokenBudget), *patch.TokenBudget))
		return
	}
	if patch.MaxSubcallsInflight != nil && (*patch.MaxSubcallsInflight < 1 || *patch.MaxSubcallsInflight > maxSubcalls) {
		writeError(w, http.StatusBadRequest, 0, false, "max_subcalls_inflight", fmt.Sprintf("must be in [1, %d] (got %d)", maxSubcalls, *patch.MaxSubcallsInflight))
		return
	}
	var newRules *ruleTable
	var ruleCfgs []RuleConfig
	if patch.RateLimit != nil && patch.RateLimit.Rules != nil {
		ruleCfgs = make([]RuleConfig, 0, len(*patch.RateLimit.Rules))
		for _, rj := range *patch.RateLimit.Rules {
			ruleCfgs = append(ruleCfgs, rj.config())
		}
		rl := RateLimitConfig{Store: g.cfg.RateLimit.Store, Rules: ruleCfgs}
		if err := rl.validate(); err != nil {
			bad(err)
			return
		}
		var err error
		if newRules, err = newRuleTable(ruleCfgs, g.keys.tenants); err != nil {
			bad(err)
			return
		}
	}
	// Everything is valid: apply.
	for c, cc := range classes.byID() {
		if err := g.bulkheads[c].SetConfig(cc); err != nil {
			writeError(w, http.StatusBadRequest, 0, false, "classes."+classID(c).String(), err.Error())
			return
		}
	}
	g.cfg.Classes = classes
	if ai := int64(classes.AI.Limiter.Limit); g.aiLimitRef.Swap(ai) != ai {
		th := g.thresholds(g.cfg.Guard)
		_ = g.guard.SetThresholds(th) // valid: same watermarks, new reference
	}
	if patch.TokenBudget != nil {
		_ = g.budget.SetCapacity(*patch.TokenBudget) // in range: checked above
		g.cfg.TokenBudget = *patch.TokenBudget
		g.cfg.Budget.MaxRequestTokens = g.budget.Config().MaxRequestTokens
	}
	if patch.MaxSubcallsInflight != nil {
		g.subcalls.setCap(*patch.MaxSubcallsInflight)
		g.cfg.Agent.MaxSubcallsInflight = int(*patch.MaxSubcallsInflight)
	}
	if newRules != nil {
		g.rules.Store(newRules)
		g.cfg.RateLimit.Rules = ruleCfgs
	}
	writeAdmin(w, g.stateLocked())
}

// putPressure is PUT /admin/pressure: in-gateway GC pressure and a
// bounded CPU hog (chaos). The object is a patch: named fields change,
// others keep their value; zeros turn a pressure off.
func (g *Gateway) putPressure(w http.ResponseWriter, r *http.Request) {
	var patch wire.PressurePatch
	if !decodeAdmin(w, r, &patch) {
		return
	}
	g.limMu.Lock() // serializes read-modify-write of the pressure
	defer g.limMu.Unlock()
	c := g.press.Config().Apply(patch)
	if err := c.Validate(); err != nil {
		var fe *pressure.FieldError
		if errors.As(err, &fe) {
			writeError(w, http.StatusBadRequest, 0, false, fe.Field, fe.Msg)
			return
		}
		writeError(w, http.StatusBadRequest, 0, false, "", err.Error())
		return
	}
	if err := g.press.Set(c); err != nil {
		writeError(w, http.StatusServiceUnavailable, 0, false, "", err.Error())
		return
	}
	writeAdmin(w, g.stateLocked())
}

// putLevel is PUT /admin/level {"level":"black"} pins the overload level
// (lessons, tests); {"level":""} or null returns to the measured level.
func (g *Gateway) putLevel(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Level *string `json:"level"`
	}
	if !decodeAdmin(w, r, &body) {
		return
	}
	if body.Level == nil || *body.Level == "" {
		g.guard.SetForced(nil)
		g.localGuard.SetForced(nil)
	} else {
		l, err := admit.ParseLevel(*body.Level)
		if err != nil {
			writeError(w, http.StatusBadRequest, 0, false, "level", err.Error())
			return
		}
		g.guard.SetForced(&l)
		g.localGuard.SetForced(&l)
	}
	writeAdmin(w, g.State())
}

// defenseNames is wire.DefenseNames as a slice.
func defenseNames() []string {
	n := wire.DefenseNames()
	return n[:]
}
