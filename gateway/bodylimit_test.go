package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestStreamNearBodyLimit: a stream request within body_limit_bytes
// reaches a model that takes the same limit (the fake model's 1 MiB, the
// gateway's default), though the gateway would ask for usage on its
// behalf: it does not when asking takes the body past the limit, and the
// stream settles on its counted chunks. Before, the 41 bytes of
// stream_options took a 1,048,566-byte body (a vision request: a data URL)
// past 1 MiB and the node's 413, "body larger than 1048576 bytes", reached
// the client.
func TestStreamNearBodyLimit(t *testing.T) {
	s := startGateway(t, nil, startNode(t, quickKnobs()))
	head := `{"model":"m","stream":true,"max_tokens":2,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,`
	tail := `"}}]}]}`
	for _, size := range []int{1<<20 - 10, 1 << 20} {
		body := head + strings.Repeat("A", size-len(head)-len(tail)) + tail
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+wire.PathChat, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Contains(string(b), `"usage"`) {
			t.Fatalf("%d bytes: %d %.300s", len(body), resp.StatusCode, b)
		}
	}
}
