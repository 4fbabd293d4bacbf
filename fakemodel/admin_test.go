package fakemodel

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestAdminMethodsAgree: /admin/knobs serves every method its 405 lists in
// Allow, and only those. PATCH is the same partial update as PUT (it was
// served but not listed: Allow said "GET, PUT").
func TestAdminMethodsAgree(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 4, OverflowQueue))
	do := func(method, body string) (int, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, url+wire.PathAdminKnobs, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header
	}
	var allow string
	for _, tc := range []struct {
		method, body string
		want         int
	}{
		{http.MethodGet, "", 200},
		{http.MethodPut, `{"slots":5}`, 200},
		{http.MethodPatch, `{"slots":6}`, 200},
		{http.MethodPost, `{"slots":7}`, 405},
		{http.MethodDelete, "", 405},
	} {
		code, h := do(tc.method, tc.body)
		if code != tc.want {
			t.Errorf("%s: %d, want %d", tc.method, code, tc.want)
		}
		if code == 405 {
			allow = h.Get("Allow")
		}
	}
	if n.Knobs().Slots != 6 {
		t.Errorf("slots %d, want 6 from the PATCH (and not 7 from the POST)", n.Knobs().Slots)
	}
	if allow != "GET, PUT, PATCH" {
		t.Errorf("405 Allow %q, want %q", allow, "GET, PUT, PATCH")
	}
	for _, m := range strings.Split(allow, ", ") {
		if code, _ := do(m, `{}`); code == 405 {
			t.Errorf("Allow lists %s, which answers 405", m)
		}
	}
}
