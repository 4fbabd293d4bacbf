package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestModelsList: GET /v1/models is OpenAI's list of the one model, its
// created time the node's start (it was 0: 1970 in a client), and any
// other method is a 405 naming GET.
func TestModelsList(t *testing.T) {
	before := time.Now().Unix()
	_, url := startNode(t, fixedKnobs(1, 1, OverflowQueue))
	resp, err := testClient.Get(url + wire.PathModels)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var l struct {
		Object string
		Data   []struct {
			ID, Object, OwnedBy string
			Created             int64
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &l) != nil || l.Object != "list" || len(l.Data) != 1 ||
		l.Data[0].ID != DefaultModel || l.Data[0].Object != "model" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if c := l.Data[0].Created; c < before || c > time.Now().Unix() {
		t.Errorf("created %d, want the node's start (%d or later, not after now)", c, before)
	}
	resp, err = testClient.Post(url+wire.PathModels, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodGet {
		t.Errorf("POST: %d, Allow %q; want 405, GET", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
