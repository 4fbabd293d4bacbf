package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// errDialed: the request got as far as dialing, so net/http found
// nothing wrong with it.
var errDialed = errors.New("dialed")

// FuzzConfigTargetsAndKeys: a generator config with any target URL and
// API key (`levee loadtest --url --key`) is refused with an error naming
// the field, or every request the generator would build from it is one
// net/http sends (a config accepted whose every request then fails is a
// run of errors blamed on the gateway). It never panics.
func FuzzConfigTargetsAndKeys(f *testing.F) {
	for _, s := range [][2]string{
		{"http://127.0.0.1:8080", "k0"}, {"https://gw.example/base/", ""}, {"http://127.0.0.1:8080/?q=1", "k"},
		{"http://h/#f", "k"}, {"ftp://h", "k"}, {"http://", "k"}, {"http://h", "a\nb"}, {"http://h", "a b"}, {"http://h", "\x7f"},
		{"http://h/a b", "k"}, {"http://[::1]:9", "k"}, {"http://h:99999", "k"}, {"http://h%zz", "k"},
	} {
		f.Add(s[0], s[1], uint8(1))
	}
	tr := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("no TCP port in %q", addr)
		}
		return nil, errDialed
	}}
	f.Fuzz(func(t *testing.T, target, key string, route uint8) {
		r := AllRoutes[int(route)%len(AllRoutes)]
		c := validConfig()
		c.Targets = []string{target}
		c.Mix.Keys = map[string]string{"P0": key, "P1": key, "P2": key}
		c.Mix.Routes = map[string]float64{string(r): 1}
		g, err := New(c)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "load: ") {
				t.Fatalf("error %q names no field", err)
			}
			return
		}
		s := spec{route: r, target: g.Targets()[0], key: key, tokens: 3, maxTokens: 4, steps: 1}
		req, err := newRequest(context.Background(), s, time.Second)
		if err != nil {
			t.Fatalf("accepted target %q and key %q, but no %s request can be built: %v", target, key, r, err)
		}
		if _, err := tr.RoundTrip(req); !errors.Is(err, errDialed) {
			t.Fatalf("accepted target %q and key %q, but net/http refuses the %s request: %v", target, key, r, err)
		}
	})
}

// FuzzReadSSE: the load generator reads any stream a gateway sends as
// lines: done when a "data:" line holds [DONE], fallback when a "data:"
// line carries the marker, each line judged by its first 4096 bytes (the
// reader's buffer) and the tail of a longer line never read as a line of
// its own. It never panics.
func FuzzReadSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"x\":1}\n\ndata: [DONE]\n\n", "data:[DONE]\r\n", "data: {\"fallback\":true}\n", "data: [DONE]",
		"data: " + strings.Repeat("x", 4090) + "data: [DONE]\n", "data: " + strings.Repeat("x", 10000) + "\ndata: [DONE]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := readSSE(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var want bodyResult
		for len(body) > 0 {
			line := body
			if i := bytes.IndexByte(body, '\n'); i >= 0 {
				line, body = body[:i+1], body[i+1:]
			} else {
				body = nil
			}
			head := bytes.TrimRight(line[:min(len(line), 4096)], "\r\n")
			if d, ok := bytes.CutPrefix(head, []byte("data:")); ok {
				d = bytes.TrimSpace(d)
				want.done = want.done || string(d) == "[DONE]"
				want.fallback = want.fallback || hasFallback(d)
			}
		}
		if got != want {
			t.Fatalf("readSSE = %+v; want %+v", got, want)
		}
	})
}
