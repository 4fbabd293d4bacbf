package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/gateway/upstream"
)

// TestConfigCompat: the gateway configs the lab generates for every
// experiment (and the default lab), and testdata/example.yaml, load to the
// same values as before the config schema embedded the parts' own types.
// testdata/compat holds each YAML and the "path: value" picture the old
// ParseConfig made of it (generated once, at the commit before the change).
// Keys the new schema adds must be in compatAdded with the value the old
// code used implicitly.
func TestConfigCompat(t *testing.T) {
	files, _ := filepath.Glob("testdata/compat/*.yaml")
	files = append(files, "testdata/example.yaml")
	if len(files) < 9 {
		t.Fatalf("only %d compat files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ParseConfig(b)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata/compat", strings.TrimSuffix(filepath.Base(f), ".yaml")+".loaded"))
			if err != nil {
				t.Fatal(err)
			}
			old := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				k, v, _ := strings.Cut(l, ": ")
				old[k] = v
			}
			seen := map[string]bool{}
			for _, l := range flatten(t, cfg) {
				k, v, _ := strings.Cut(l, ": ")
				seen[k] = true
				if ov, ok := old[k]; ok {
					if cv, changed := compatChanged[k]; changed && v == cv {
						continue
					}
					if ov != v {
						t.Errorf("%s: %q, was %q", k, v, ov)
					}
					continue
				}
				if av, ok := compatAdded(t, k); !ok || (av != v && !isZero(v)) {
					t.Errorf("%s: %q is new (allowed: %v, default %q)", k, v, ok, av)
				}
			}
			for k := range old {
				if !seen[k] {
					t.Errorf("%s: gone (was %q)", k, old[k])
				}
			}
		})
	}
}

// compatChanged lists the keys whose default issue 9 changed on purpose,
// with the new value: the upstream latency ratio fired on the normal
// spread of a mixed workload (predict beside long streams) and shed a
// healthy system, so the guard leaves it off unless a config sets it.
var compatChanged = map[string]string{
	"guard.upstream_latency_ratio.yellow": "0",
	"guard.upstream_latency_ratio.red":    "0",
	"guard.upstream_latency_ratio.black":  "0",
}

// compatAdded returns the value a key the new schema adds must have when a
// file does not set it, and whether the key may appear at all. The parts'
// own config types bring keys the old schema did not have: the pool's
// health_timeout, unhealthy_threshold and retry_budget.ttl, set to what
// the pool used when the gateway left them out; and the adaptive
// limiters' tuning, zero ("use admit's default", as before). A key a part
// adds later with a zero value is "unset" and loads identically too.
//
// Issue 10 added the pool's partial-failure defenses (retry_on,
// latency_window, attempt_timeout, hedge, outlier, retry_budget's
// p0_reserve and shared): a file that does not name them gets the pool's
// own defaults, which are new behaviour by design, not a changed reading
// of an old key.
func compatAdded(t testing.TB, key string) (string, bool) {
	switch key {
	case "upstream.health_timeout":
		return upstream.DefaultHealthTimeout.String(), true
	case "upstream.unhealthy_threshold":
		return strconv.Itoa(upstream.DefaultUnhealthyThreshold), true
	case "upstream.retry_budget.ttl":
		return upstream.DefaultRetryTTL.String(), true
	case "drain_delay": // 0: stop accepting at once, as before
		return "0s", true
	case "max_tokens_limit": // the bound the code held as a constant before
		return strconv.Itoa(MaxMaxTokens), true
	case "routes.completions.timeout", "routes.embeddings.timeout": // routes the gateway answered 404 before
		return "30s", true
	case "upstream.idle_conn_timeout": // Go's, which the transport used before
		return upstream.DefaultIdleConnTimeout.String(), true
	case "routes.embeddings.answer_limit_bytes": // the constant the gateway held before
		return strconv.Itoa(32 << 20), true
	}
	// Issue 12 (seed 004) added these; what they default to keeps the old
	// behaviour for anything the old schema could express (one agent step
	// when the body names none; no node ever signals backpressure unless
	// told to).
	if v, ok := issue12Added[key]; ok {
		return v, true
	}
	if v, ok := poolDefenseDefaults(t)[key]; ok {
		return v, true
	}
	return "0", strings.HasPrefix(key, "classes.") || strings.HasPrefix(key, "upstream.")
}

var issue12Added = map[string]string{
	"admin_allow_remote":              "false",
	"budget.max_request_tokens":       "0",
	"budget.reserve_p0":               "0.25",
	"budget.reserve_p1":               "0.1",
	"agent.max_depth":                 "5",
	"agent.yellow_depth":              "2",
	"agent.black_nodes_down":          "0.3",
	"agent.queue_size":                "64",
	"agent.max_prompt_chars":          "262144",
	"guard.backpressure_share.yellow": "0.25",
	"guard.backpressure_share.red":    "0.5",
	"guard.backpressure_share.black":  "0",
	"guard.backpressure_ttl":          "2s",
	"stream.request_usage":            "true",
}

// poolDefenseDefaults maps the flattened keys of issue 10's pool settings
// to the values upstream's WithDefaults gives them.
func poolDefenseDefaults(t testing.TB) map[string]string {
	def := upstream.Config{}.WithDefaults()
	out := map[string]string{}
	for _, l := range flatten(t, struct {
		U upstream.Config `yaml:"upstream"`
	}{def}) {
		k, v, _ := strings.Cut(l, ": ")
		for _, p := range []string{"upstream.retry_on", "upstream.latency_window", "upstream.attempt_timeout.",
			"upstream.hedge.", "upstream.outlier.", "upstream.retry_budget.p0_reserve", "upstream.retry_budget.shared"} {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

// isZero reports whether a flattened YAML scalar is a zero value.
func isZero(v string) bool {
	switch v {
	case "0", "0s", "", "false", "[]", "null":
		return true
	}
	return false
}

// flatten returns "path: value" lines, sorted, for every scalar of v's YAML
// form: a layout-independent picture of a loaded config.
func flatten(t testing.TB, v any) []string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			if len(n.Content) == 0 {
				out = append(out, path+": []")
			}
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			out = append(out, path+": "+n.Value)
		}
	}
	walk(&doc, "")
	sort.Strings(out)
	return out
}
