package httpbody

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/httpbody/httpbodytest"
)

// TestUnreadBodyIsCut: a handler that never reads its body answers at
// once; the client then trickles the body. Without Deadline net/http
// drains it for as long as the client sends; with it the connection is
// closed once the deadline passes, long before the body is complete.
func TestUnreadBodyIsCut(t *testing.T) {
	healthz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	const n, gap = 60, 50 * time.Millisecond // 3 s of body
	for _, tt := range []struct {
		name    string
		h       http.Handler
		wantCut bool
	}{
		{"bare net/http holds the connection", healthz, false},
		{"Deadline cuts it", Deadline(healthz, 200*time.Millisecond), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tt.h)
			srv.Config.ReadHeaderTimeout = 200 * time.Millisecond
			srv.Start()
			defer srv.Close()
			if got := httpbodytest.Trickle(t, srv.Listener.Addr().String(), http.MethodPost, "/healthz", "", n, gap); got != tt.wantCut {
				t.Fatalf("connection cut before the body ended: %v, want %v", got, tt.wantCut)
			}
		})
	}
}

// TestReadBodyAndLongAnswer: a handler that reads its body and clears the
// deadline answers long after the deadline without its context ending,
// and a request without a body is never given a deadline.
func TestReadBodyAndLongAnswer(t *testing.T) {
	h := Deadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		Done(w)
		select {
		case <-r.Context().Done():
			http.Error(w, "context ended", http.StatusInternalServerError)
		case <-time.After(400 * time.Millisecond): // > the deadline below
			_, _ = io.WriteString(w, "ok")
		}
	}), 100*time.Millisecond)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, body := range []string{"payload", ""} {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		resp, err := http.Post(srv.URL, "text/plain", rd)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("body %q: %d %q", body, resp.StatusCode, b)
		}
	}
}
