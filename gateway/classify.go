package gateway

import (
	"net/http"
	"strings"

	"github.com/levee-lab/levee/gateway/admit"
)

// Identity is who a request comes from, as the key table says. A client's
// own priority headers are never read.
type Identity struct {
	Tenant   string
	Priority admit.Priority
	// tid indexes the gateway's tenant list (precomputed rate-limit keys).
	tid int
}

// keyTable maps API keys to identities. It is immutable after newKeyTable.
type keyTable struct {
	byKey   map[string]Identity
	anon    Identity
	reject  bool     // unknown_key: reject
	tenants []string // tenant names by tid; anonymous is tid 0
}

func newKeyTable(cfg *Config) *keyTable {
	kt := &keyTable{
		byKey:   make(map[string]Identity, len(cfg.Keys)),
		reject:  cfg.UnknownKey == UnknownKeyReject,
		tenants: []string{cfg.AnonymousTenant},
	}
	kt.anon = Identity{Tenant: cfg.AnonymousTenant, Priority: admit.P2, tid: 0}
	tids := map[string]int{cfg.AnonymousTenant: 0}
	for _, k := range cfg.Keys {
		tid, ok := tids[k.Tenant]
		if !ok {
			tid = len(kt.tenants)
			tids[k.Tenant] = tid
			kt.tenants = append(kt.tenants, k.Tenant)
		}
		p, _ := admit.ParsePriority(k.Priority) // validated by Config.Validate
		kt.byKey[k.Key] = Identity{Tenant: k.Tenant, Priority: p, tid: tid}
	}
	return kt
}

// classify returns the identity of the request's API key (Authorization:
// Bearer KEY). A missing or unknown key is the anonymous P2 identity, or
// ok=false when the policy is to reject. It does not allocate.
func (kt *keyTable) classify(r *http.Request) (id Identity, ok bool) {
	// The map directly: the server stores header keys canonical, and Get
	// would canonicalize "Authorization" again on every request (a tenth
	// of BenchmarkAdmit).
	var key string
	if v := r.Header["Authorization"]; len(v) > 0 {
		key = bearer(v[0])
	}
	if key != "" {
		if id, found := kt.byKey[key]; found {
			return id, true
		}
	}
	return kt.anon, !kt.reject
}

// bearer extracts the token of an "Authorization: Bearer TOKEN" value
// (scheme case-insensitive); "" when absent or of another scheme.
func bearer(h string) string {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}

// estimateTokens is the cost estimate of one model call: prompt characters
// / 4 (rounded up) plus the completion budget max_tokens.
func estimateTokens(promptChars int, maxTokens int) int64 {
	return int64((promptChars+3)/4) + int64(max(maxTokens, 0))
}
