package htmlreport

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var bandLabelRE = regexp.MustCompile(`<text class="band-label" x="[^"]*" y="([^"]*)"[^>]*>([^<]*)</text>`)

// TestRepeatedBandLabels: a gateway OOM-killed nine times in a minute
// (reference lesson 01) must not stack its label nine rows down a
// half-width chart over the data. A repeated label is drawn only in the
// top row; a label not drawn before is always drawn, whatever row it needs.
func TestRepeatedBandLabels(t *testing.T) {
	var bands []band
	for i := 0; i < 9; i++ {
		from := 10 + 5.5*float64(i)
		bands = append(bands, band{Kind: "down", Name: "gateway-0", Detail: "OOM-killed, restarting", From: from, To: from + 3})
	}
	bands = append(bands, band{Kind: "fault", Name: "node_kill", Detail: "#2", From: 31, To: 40})
	pg := &page{XMax: 60, Runs: []runView{{Label: "A", Bands: bands}}, Charts: []chart{{ID: "success", YMax: 100}}}
	var b strings.Builder
	renderSVG(&b, pg, 0, false)
	top := newPlot(pg, pg.Charts[0], false).top
	var oom, kill int
	for _, m := range bandLabelRE.FindAllStringSubmatch(b.String(), -1) {
		y, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(m[2], "gateway-0"):
			oom++
			if y != top+10 {
				t.Errorf("a repeated label %q in row %.0f, want only the top row", m[2], (y-top-10)/labelPitch)
			}
		case m[2] == "node_kill #2":
			kill++
		}
	}
	if oom == 0 || oom == len(bands)-1 {
		t.Errorf("%d of 9 outage labels drawn; want the first, and only those with room in the top row", oom)
	}
	if kill != 1 {
		t.Errorf("the node_kill band's label drawn %d times, want once", kill)
	}
}

// TestBandLabelPlacement: a label starts at its band; near the end of the
// axis it ends at its band's right edge instead (beside its band, not at
// the plot's edge far from it); a label that would run past the plot's
// right edge ends at that edge.
func TestBandLabelPlacement(t *testing.T) {
	bands := []band{
		{Kind: "fault", Name: "node_kill", Detail: "#2", From: 5, To: 10},
		{Kind: "down", Name: "gateway-0", Detail: "OOM-killed, restarting", From: 48, To: 49},
		{Kind: "fault", Name: "model_latency", Detail: "×3 all nodes, a long while", From: 40, To: 44},
	}
	pg := &page{XMax: 60, Runs: []runView{{Label: "A", Bands: bands}}, Charts: []chart{{ID: "memory", YMax: 100}}}
	p := newPlot(pg, pg.Charts[0], false)
	var b strings.Builder
	renderSVG(&b, pg, 0, false)
	re := regexp.MustCompile(`<text class="band-label" x="([^"]*)" y="[^"]*"( text-anchor="end")?>([^<]*)</text>`)
	want := map[string]struct {
		x   float64
		end bool
	}{
		"node_kill #2":                             {p.X(5) + 3, false},
		"gateway-0 OOM-killed, restarting":         {p.X(49) - 3, true},
		"model_latency ×3 all nodes, a long while": {p.w - padR - 3, true},
	}
	got := 0
	for _, m := range re.FindAllStringSubmatch(b.String(), -1) {
		w, ok := want[m[3]]
		if !ok {
			continue
		}
		got++
		x, _ := strconv.ParseFloat(m[1], 64)
		if math.Abs(x-w.x) > 0.1 || (m[2] != "") != w.end {
			t.Errorf("%q at x %.1f (end-anchored %v), want %.1f (%v)", m[3], x, m[2] != "", w.x, w.end)
		}
	}
	if got != len(want) {
		t.Errorf("%d of %d labels drawn", got, len(want))
	}
}
