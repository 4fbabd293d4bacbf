package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/wire"
)

// serveModels is GET /v1/models: the model list of a node in rotation,
// relayed as it came (status, Content-Type, body — but a refusal of the
// gateway's credentials, a 502 as on the model routes; a body over
// maxUpstreamBody bytes is a 502, never relayed truncated). OpenAI
// clients list the models before anything else (Open WebUI when a
// connection is added). It is route "other":
// counted, neither rate-limited nor admitted, since it costs a model no
// work; a node's failure is an error (502), a passed deadline a timeout
// (504), never a fallback.
func (g *Gateway) serveModels(x *exchange) {
	resp, err := g.pool.Send(x.ctx, upstream.Call{Method: http.MethodGet, Path: wire.PathModels,
		Priority: int(x.id.Priority), Class: wire.CallDefault})
	if err != nil {
		// ErrDeadline: the remaining time cannot cover
		// upstream.min_service_time, so nothing was sent — a timeout, as
		// on the model routes (callModel).
		if errors.Is(err, upstream.ErrDeadline) || deadlinePassed(x.ctx, time.Now()) {
			x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "deadline cannot be met listing the models: "+err.Error())
			return
		}
		x.fail(http.StatusBadGateway, wire.OutcomeError, "", "upstream failed listing the models: "+err.Error())
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	if err == nil && len(b) > maxUpstreamBody {
		// Relaying the first bytes would hand the client a truncated
		// list under the node's status.
		x.fail(http.StatusBadGateway, wire.OutcomeError, "", fmt.Sprintf("upstream model list exceeds %d bytes", maxUpstreamBody))
		return
	}
	if err != nil {
		if x.timedOut() {
			x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "deadline passed reading the model list: "+err.Error())
			return
		}
		x.fail(http.StatusBadGateway, wire.OutcomeError, "", "upstream model list: "+err.Error())
		return
	}
	if credentialRefusal(resp.StatusCode) { // the gateway's key, not the client's (see writeRefusal)
		x.fail(http.StatusBadGateway, wire.OutcomeError, "", credentialMsg(resp.StatusCode))
		return
	}
	o := wire.OutcomeOK
	if resp.StatusCode != http.StatusOK {
		o = wire.OutcomeError
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = "application/json"
	}
	h := x.w.Header()
	h.Set("Content-Type", ctype)
	h.Set(wire.HeaderOutcome, o.String())
	x.writeAnswer(resp.StatusCode, b, o)
}
