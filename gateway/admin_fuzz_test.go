package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// FuzzAdminBody: any body PUT to /admin/defenses, /admin/limits or
// /admin/level is applied whole (200, with a config that still
// validates) or refused whole (400 naming a field or "malformed JSON",
// the gateway's state unchanged). It never panics. (/admin/pressure
// starts real GC pressure and a CPU hog, so its body is only decoded and
// validated here.)
func FuzzAdminBody(f *testing.F) {
	paths := []string{wire.PathAdminDefenses, wire.PathAdminLimits, wire.PathAdminLevel, wire.PathAdminPressure}
	for _, s := range []string{
		`{"guard":false,"ratelimit":true}`, `{"guard":null}`, `{"nope":true}`,
		`{"classes":{"ai":{"algorithm":"aimd","limit":8,"min":2,"max":64,"queue_size":10,"queue_timeout_ms":500}},"token_budget":5000,"max_subcalls_inflight":8}`,
		`{"classes":{"ai":{"limit":0}}}`, `{"classes":{"ai":{"queue_timeout_ms":9223372036854775807}}}`,
		`{"ratelimit":{"rules":[{"tenant":"*","route":"ai","algorithm":"sliding_window","limit":10,"window_ms":1000}]}}`,
		`{"ratelimit":{"rules":[{"tenant":"web","algorithm":"token_bucket","rate":5,"burst":10}]}}`,
		`{"level":"red"}`, `{"level":""}`, `{"level":"purple"}`, `{"gc_ballast_mb":64,"cpu_hog_duty":0.5}`,
		`{"classes":{"AI":{}}}`, `{"token_budget":1,"token_budget":2}`, `{} {}`, `[]`, ``,
	} {
		for i := range paths {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		path := paths[int(which)%len(paths)]
		g, err := New(testConfig("127.0.0.1:9"))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if path == wire.PathAdminPressure {
			var patch wire.PressurePatch
			rec := httptest.NewRecorder()
			if decodeAdmin(rec, httptest.NewRequest(http.MethodPut, path, bytes.NewReader(body)), &patch) {
				_ = g.press.Config().Apply(patch).Validate()
			} else {
				checkAdminError(t, rec, body)
			}
			return
		}
		before := adminState(t, g)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPut, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		requireToken(testToken, g.newAdminHandler()).ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			g.limMu.Lock()
			cfg := g.cfg
			g.limMu.Unlock()
			if err := cfg.Validate(); err != nil {
				t.Fatalf("PUT %s %s left a config that does not validate: %v", path, body, err)
			}
		case http.StatusBadRequest:
			checkAdminError(t, rec, body)
			if after := adminState(t, g); !bytes.Equal(after, before) {
				t.Fatalf("PUT %s %s refused (%s) but changed the state:\n%s\n%s", path, body, rec.Body, before, after)
			}
		default:
			t.Fatalf("PUT %s %s: status %d %s", path, body, rec.Code, rec.Body)
		}
	})
}

// adminState is what an admin PUT may change: limits, defenses and the
// forced level.
func adminState(t *testing.T, g *Gateway) []byte {
	st := g.State()
	b, err := json.Marshal(struct {
		Limits   LimitsState
		Defenses map[string]bool
		Level    string
	}{st.Limits, st.Defenses, st.Level})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAdminError: a refusal is a JSON error with a message.
func checkAdminError(t *testing.T, rec *httptest.ResponseRecorder, body []byte) {
	var e wire.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("%s: status %d without a JSON error message: %s", body, rec.Code, rec.Body)
	}
	if strings.HasPrefix(e.Error.Message, ":") || strings.Contains(e.Error.Message, "Go ") {
		t.Fatalf("%s: the message names no field, or speaks Go: %q", body, e.Error.Message)
	}
}
