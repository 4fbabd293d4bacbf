package htmlreport

import (
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
