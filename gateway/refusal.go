package gateway

import (
	"fmt"
	"io"
	"net/http"

	"github.com/levee-lab/levee/internal/wire"
)

// refusal is a model's answer other than 200 and below 500, read whole
// (see writeRefusal).
type refusal struct {
	status int
	ctype  string
	body   []byte
}

// maxRefusalBody bounds the body of a model's 4xx the gateway relays.
const maxRefusalBody = 64 << 10

// readRefusal reads a refusal to relay, at most maxRefusalBody bytes, and
// closes resp's body.
func readRefusal(resp *http.Response) refusal {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = "application/json"
	}
	return refusal{resp.StatusCode, ctype, b}
}

// writeRefusal answers a model's refusal (a 4xx: the request was bad,
// not the model) as it came — status, Content-Type (application/json when
// it names none) and body, JSON or not (a proxy in front of the model may
// answer HTML) — and counts an error. A refusal of the gateway's own
// credentials is not relayed (see credentialRefusal): it is an upstream
// failure, answered as one (502, or the fallback; stream says which
// fallback).
func (x *exchange) writeRefusal(r refusal, stream bool) {
	if credentialRefusal(r.status) {
		x.upstreamFailed(http.StatusBadGateway, credentialMsg(r.status), stream, 0)
		return
	}
	h := x.w.Header()
	h.Set("Content-Type", r.ctype)
	h.Set(wire.HeaderOutcome, wire.OutcomeError.String())
	x.writeAnswer(r.status, r.body, wire.OutcomeError)
}

// credentialRefusal reports whether a model's status refuses the
// credentials of the request. The gateway never forwards a client's own
// Authorization (only upstream.headers), so such a refusal is about the
// gateway's key, the operator's to fix: relayed, it would tell the client
// that its own key is wrong (invalid_api_key), and OpenAI's 401 quotes
// the key it refused, masked but for its last characters.
func credentialRefusal(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden ||
		status == http.StatusProxyAuthRequired
}

// credentialMsg is the client's message for a credential refusal: what
// happened, not the model's body.
func credentialMsg(status int) string {
	return fmt.Sprintf("upstream refused the gateway's credentials (%d %s): the gateway's upstream.headers key is missing, wrong or not allowed there", status, http.StatusText(status))
}
