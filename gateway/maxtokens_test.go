package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestMaxTokensLimitIsASetting: max_tokens_limit bounds max_tokens on the
// model routes over real HTTP. Raised to 200,000 (a long-context
// backend), a chat request for 100,000 tokens reaches the model; 200,001
// is a 400 naming max_tokens and the limit, as is an agent's. The default
// stays openai.MaxTokens: 32,769 is refused there.
func TestMaxTokensLimitIsASetting(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	chat := func(n int) string {
		return fmt.Sprintf(`{"model":"m","max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, n)
	}
	wantBad := func(a answer, field, limit string) {
		t.Helper()
		var e wire.ErrorBody
		if a.status != http.StatusBadRequest || json.Unmarshal(a.body, &e) != nil || e.Error.Param != field || !strings.Contains(e.Error.Message, limit) {
			t.Errorf("got %d %s, want 400 naming %s and %s", a.status, a.body, field, limit)
		}
	}

	cfg := testConfig(fm.addr())
	cfg.MaxTokensLimit = 200000
	cfg.TokenBudget = 1 << 30 // the budget's per-request cap is not what is tested
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	if a := call(t, http.MethodPost, base+wire.PathChat, "k0", chat(100000)); a.status != http.StatusOK || a.outcome != "ok" {
		t.Errorf("max_tokens 100000 under max_tokens_limit 200000: %d %q %s, want 200 ok", a.status, a.outcome, a.body)
	}
	wantBad(call(t, http.MethodPost, base+wire.PathChat, "k0", chat(200001)), "max_tokens", "[0, 200000]")
	wantBad(call(t, http.MethodPost, base+wire.PathAgent, "k0", `{"prompt":"p","max_tokens":200001}`), "max_tokens", "[0, 200000]")

	def := startServer(t, testConfig(fm.addr()))
	wantBad(call(t, http.MethodPost, "http://"+def.Addr()+wire.PathChat, "k0", chat(MaxMaxTokens+1)), "max_tokens", fmt.Sprintf("[0, %d]", MaxMaxTokens))
	if got := fm.arrivals.Load(); got != 1 {
		t.Errorf("the model got %d calls, want 1 (refused requests never reach it)", got)
	}
}
